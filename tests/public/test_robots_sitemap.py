"""robots.txt and the sitemap, read with the standard library's own robots parser and
an XML parser: what a crawler may fetch, and every public page in both languages."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from urllib.robotparser import RobotFileParser

import pytest
from django.test import Client

from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def _xml(body: bytes) -> ET.Element:
    return ET.fromstring(body)  # noqa: S314 - our own response, parsed to check it


SITE = "https://status.example.com"
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"


@pytest.fixture
def site(settings):  # type: ignore[no-untyped-def]
    settings.SITE_URL = SITE
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "evil.example"]
    gmail = make_product("Gmail")
    hidden = make_product("Internal Billing", slug="billing", is_public=False)
    return {
        "gmail": gmail,
        "public": make_incident(title="Gmail is down", product=gmail, start=utc(2026, 1, 1)),
        "private": make_incident(title="Staff only", product=gmail, start=utc(2026, 1, 2), is_public=False),
        "hidden": make_incident(title="Billing export", product=hidden, start=utc(2026, 1, 3)),
    }


def test_robots_lets_crawlers_read_the_public_pages_only(client: Client, site) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/robots.txt")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response["Cache-Control"].startswith("public")
    robots = RobotFileParser()
    robots.parse(response.content.decode().splitlines())
    public_id = site["public"].public_id
    for path in (
        "/",
        "/fr/",
        "/history/",
        "/fr/history/",
        f"/incidents/{public_id}/",
        f"/fr/incidents/{public_id}/",
        "/products/gmail/",
        "/products/gmail/uptime/",
        "/history.atom",
        "/subscribe/",
        "/sitemap.xml",
    ):
        assert robots.can_fetch("AnyBot", f"{SITE}{path}"), path
    for path in (
        "/manage/",
        "/manage/credits/",
        "/admin/",
        "/api/v1/incidents/",
        "/api/v2/summary.json",
        "/language/fr/?next=/",
        "/live/version.json",
        "/subscribe/confirm/token/",
        "/unsubscribe/token/",
        "/fr/unsubscribe/token/",
        "/subscriptions/manage/token/",
        "/fr/subscriptions/manage/token/",
    ):
        assert not robots.can_fetch("AnyBot", f"{SITE}{path}"), path
    assert robots.site_maps() == [f"{SITE}/sitemap.xml"]


def test_the_sitemap_lists_every_public_page_in_both_languages(client: Client, site) -> None:  # type: ignore[no-untyped-def]
    # The first reader forges its Host; the sitemap is cached for everyone after it.
    response = client.get("/sitemap.xml", HTTP_HOST="evil.example")
    assert response.status_code == 200
    assert b"evil.example" not in response.content
    root = _xml(response.content)
    urls = {u.findtext(f"{SM}loc") or "": u for u in root.findall(f"{SM}url")}
    public_id = site["public"].public_id
    pages = [
        "/",
        "/history/",
        "/subscribe/",
        "/products/gmail/",
        "/products/gmail/uptime/",
        f"/incidents/{public_id}/",
    ]
    assert set(urls) == {f"{SITE}{prefix}{path}" for path in pages for prefix in ("", "/fr")}
    body = response.content.decode()
    for hidden in (site["private"].public_id, site["hidden"].public_id, "billing"):
        assert hidden not in body

    for loc, url in urls.items():
        alternates = {link.get("hreflang"): link.get("href") for link in url.findall(f"{XHTML}link")}
        english = loc.replace(f"{SITE}/fr/", f"{SITE}/")
        assert alternates == {
            "en": english,
            "fr": english.replace(SITE, f"{SITE}/fr", 1),
            "x-default": english,
        }
        # Each address answers 200 (read through this test's client, on its path).
        assert client.get(loc.removeprefix(SITE)).status_code == 200, loc
    assert urls[f"{SITE}/incidents/{public_id}/"].findtext(f"{SM}lastmod")
