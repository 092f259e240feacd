"""The live sections of a page (public_site/live_markup.py, public_site/live.py): found by
their data-live attribute, stamped with digests, and sent back only when they differ."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client, RequestFactory
from django.utils import timezone
from freezegun import freeze_time

from edge import version
from public_site import live_markup, views
from tests.builders import make_incident, make_product, utc

PAGE = """<!doctype html><html><head><title>All &amp; well</title></head><body>
<svg class="mark" data-live="brand"><use href="#i"></use></svg>
<!-- <div data-live="ghost"> -->
<section data-live="banner" class="b"><h1>Up</h1><br><img src="x" alt="a"><p>t <time>now</time></p></section>
<div data-live="products"><ul><li><a href="/p/">P</a><input type="checkbox"/></li></ul>
<div data-live="inner">nested</div></div>
</body></html>"""


def test_it_finds_the_outermost_sections_by_their_attribute() -> None:
    sections = live_markup.find_sections(PAGE)
    assert [s.name for s in sections] == ["brand", "banner", "products"]
    markup = {s.name: s.markup(PAGE) for s in sections}
    assert markup["brand"] == '<svg class="mark" data-live="brand"><use href="#i"></use></svg>'
    assert markup["banner"].startswith('<section data-live="banner"') and markup["banner"].endswith(
        "</section>"
    )
    assert markup["products"].endswith('<div data-live="inner">nested</div></div>')
    assert live_markup.title_of(PAGE) == "All & well"


def test_it_stamps_each_section_with_the_digest_of_its_content() -> None:
    marked = live_markup.mark_sections(PAGE)
    stamps = re.findall(r'data-live="(\w+)" data-live-digest="([0-9a-f]{12})"', marked)
    assert [name for name, _ in stamps] == ["brand", "banner", "products"]
    sections = live_markup.sections_of(marked)
    assert dict(stamps) == {name: d for name, (d, _m) in sections.items()}
    # The same content, the same digest; other content, another one.
    assert live_markup.mark_sections(PAGE) == marked
    changed = live_markup.mark_sections(PAGE.replace("<h1>Up</h1>", "<h1>Down</h1>"))
    new = live_markup.sections_of(changed)
    assert new["banner"][0] != sections["banner"][0]
    assert new["products"][0] == sections["products"][0]


def _digests(body: str) -> str:
    return ".".join(re.findall(r'data-live-digest="([0-9a-f]+)"', body))


@pytest.fixture
def gmail(db: None):  # type: ignore[no-untyped-def]
    product = make_product("Gmail")
    make_product("Drive", position=1)
    make_incident(title="An old outage", product=product, start=utc(2026, 1, 1), end=utc(2026, 1, 1, 2))
    return product


def test_nothing_changed_means_no_section(client: Client, gmail) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/")
    body = page.content.decode()
    names = re.findall(r'data-live="(\w+)" data-live-digest=', body)
    assert {"brand", "banner", "incidents", "maintenance", "products", "grid", "recent"} <= set(names)
    answer = client.get("/live/sections.json", {"path": "/", "v": "x", "have": _digests(body)})
    assert answer.status_code == 200
    assert answer.json() == {"sections": {}, "title": "", "stale": False}
    assert answer["Cache-Control"].startswith("public, max-age=2")
    # Rendered again a little later with nothing public changed: the same sections ("Last
    # updated" is the last change, not the render).
    render = getattr(views.status_index, "__wrapped__")  # noqa: B009 - under the page cache
    with freeze_time(timezone.now() + timedelta(seconds=50)):
        assert _digests(render(RequestFactory().get("/")).content.decode()) == _digests(body)


def test_a_change_sends_only_the_sections_it_touched(client: Client, gmail) -> None:  # type: ignore[no-untyped-def]
    body = client.get("/").content.decode()
    make_incident(title="Gmail cannot send mail", product=gmail, start=timezone.now())
    version._bump()
    answer = client.get("/live/sections.json", {"path": "/", "v": "y", "have": _digests(body)}).json()
    assert {"banner", "incidents", "products", "brand"} <= set(answer["sections"])
    assert "maintenance" not in answer["sections"]
    assert "Gmail cannot send mail" in answer["sections"]["incidents"]
    assert answer["sections"]["incidents"].startswith('<div data-live="incidents" data-live-digest="')
    assert answer["title"] and answer["stale"] is False
    # What it sent is what the page now holds, rendered (and cached) as the page itself.
    fresh = client.get("/").content.decode()
    assert answer["sections"]["banner"] in fresh
    assert '<a href="/" aria-current="page">' in fresh


def test_product_incident_and_french_pages_have_sections(client: Client, gmail) -> None:  # type: ignore[no-untyped-def]
    incident = make_incident(title="Gmail is slow", product=gmail, start=timezone.now())
    for path, name in [
        ("/products/gmail/", "product"),
        ("/fr/products/gmail/", "product"),
        (f"/incidents/{incident.public_id}/", "incident"),
        ("/fr/", "banner"),
    ]:
        answer = client.get("/live/sections.json", {"path": path, "have": ""})
        assert answer.status_code == 200, path
        assert name in answer.json()["sections"], path
    french = client.get("/live/sections.json", {"path": "/fr/", "have": ""}).json()
    assert client.get("/fr/").content.decode().count(french["sections"]["banner"]) == 1


@pytest.mark.parametrize(
    "path", ["/history/", "//evil.example/", "http://evil.example/", "/nowhere/", "", "/products/nope/"]
)
def test_it_answers_only_for_live_pages(client: Client, gmail, path: str) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/live/sections.json", {"path": path}).status_code == 404


def test_the_version_document_may_be_kept_briefly_by_a_cdn(client: Client, settings, db: None) -> None:  # type: ignore[no-untyped-def]
    settings.LIVE_DOCUMENT_MAX_AGE = 3
    answer = client.get("/live/version.json")
    assert answer["Cache-Control"].startswith("public, max-age=3")
    assert client.get("/live/version.json", HTTP_IF_NONE_MATCH=answer["ETag"]).status_code == 304
