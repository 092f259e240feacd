"""What search engines read: `/robots.txt` and `/sitemap.xml`.

The sitemap (django.contrib.sitemaps) lists the public pages, the product pages and the
published incidents in every language, each with its hreflang alternates. Like the feeds,
every address is absolute on SITE_URL, never the request's Host: the sitemap is cached
and served to every reader. robots.txt keeps crawlers out of the staff side, the API,
the language switch, the live document and the subscribers' own (token) pages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.sitemaps import Sitemap
from django.contrib.sitemaps import views as sitemap_views
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from edge.http import PUBLIC_CACHE_CONTROL
from edge.middleware import shed_exempt
from incidents.models import Incident
from incidents.selectors import incidents_public, products_public

# One sitemap file holds at most 50,000 addresses; each incident takes one per language.
# Older incidents stay reachable from the monthly history, which crawlers follow.
SITEMAP_MAX_INCIDENTS = 5000

# Paths no crawler needs: the staff side and the API (for programs, not readers), the
# language switch (it sets a cookie and redirects), the live page's polling document.
PRIVATE_PREFIXES = ("/admin/", "/manage/", "/staff/", "/api/", "/language/", "/live/")
# A subscriber's own pages carry a secret token, in every language.
TOKEN_PREFIXES = ("/subscribe/confirm/", "/subscriptions/", "/unsubscribe/")


class OnSiteUrl(Sitemap):
    """Every address on SITE_URL, in every language, with its alternates."""

    i18n = True
    alternates = True
    x_default = True

    def get_protocol(self, protocol: str | None = None) -> str:
        return urlsplit(settings.SITE_URL).scheme

    def get_domain(self, site: Any = None) -> str:
        # The host and any path prefix: the locations are appended to it as they are.
        parts = urlsplit(settings.SITE_URL)
        return parts.netloc + parts.path


class PagesSitemap(OnSiteUrl):
    def items(self) -> list[str]:
        return ["public:index", "public:history", "subscriptions:subscribe"]

    def location(self, item: str) -> str:
        return reverse(item)


class ProductsSitemap(OnSiteUrl):
    def items(self) -> list[tuple[str, str]]:
        slugs = products_public().values_list("slug", flat=True)
        return [(name, slug) for slug in slugs for name in ("public:product", "public:product-uptime")]

    def location(self, item: tuple[str, str]) -> str:
        name, slug = item
        return reverse(name, args=[slug])


class IncidentsSitemap(OnSiteUrl):
    def items(self) -> QuerySet[Incident]:
        newest = incidents_public().order_by("-started_at", "-id")
        return newest.only("public_id", "updated_at")[:SITEMAP_MAX_INCIDENTS]

    def location(self, item: Incident) -> str:
        return reverse("public:incident", args=[item.public_id])

    def lastmod(self, item: Incident) -> Any:
        return item.updated_at


SITEMAPS: dict[str, type[Sitemap[Any]] | Sitemap[Any]] = {
    "pages": PagesSitemap,
    "products": ProductsSitemap,
    "incidents": IncidentsSitemap,
}


def sitemap(request: HttpRequest) -> HttpResponse:
    # One file, never paginated: the limits above keep it under the 50,000 addresses.
    return sitemap_views.sitemap(request, sitemaps=SITEMAPS)


def _disallowed() -> list[str]:
    paths = list(PRIVATE_PREFIXES)
    for code, _name in settings.LANGUAGES:
        prefix = "" if code == settings.LANGUAGE_CODE else f"/{code}"
        paths.extend(prefix + path for path in TOKEN_PREFIXES)
    return paths


@shed_exempt
def robots_txt(request: HttpRequest) -> HttpResponse:
    lines = ["User-agent: *", *(f"Disallow: {path}" for path in _disallowed()), "Allow: /", ""]
    lines.append(f"Sitemap: {settings.SITE_URL}{reverse('feeds:sitemap')}")
    response = HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = PUBLIC_CACHE_CONTROL
    return response
