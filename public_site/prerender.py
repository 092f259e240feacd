"""What edge/prerender.py renders ahead of visitors, in that order: the home page and the
badges first (what a visitor and an embedding page ask for first after a deploy or a
change), then each public product's page; pages in every language, badges once (their
address has no language). Design: docs/adr/0017-prerender.md."""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.urls import reverse
from django.utils import translation

from incidents.selectors import products_public


def _in_each_language(name: str, *args: str) -> Iterator[str]:
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            yield reverse(name, args=args)


def prerender_paths() -> Iterator[str]:
    slugs = list(products_public().values_list("slug", flat=True))
    yield from _in_each_language("public:index")
    yield reverse("feeds:badge")
    for slug in slugs:
        yield reverse("feeds:product-badge", args=[slug])
    for slug in slugs:
        yield from _in_each_language("public:product", slug)
