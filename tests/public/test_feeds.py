"""Atom and RSS feeds of the history: valid for feed readers, one entry per incident."""

from __future__ import annotations

from datetime import timedelta

import feedparser
import pytest
from django.test import Client
from freezegun import freeze_time

from incidents import services
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 11, 29, 20, 0)


@pytest.fixture
def incidents():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        gmail = make_product("Gmail")
        hidden_product = make_product("Internal Billing", is_public=False)
        resolved = make_incident(
            title="Gmail web interface unavailable",
            product=gmail,
            start=utc(2009, 9, 1, 19, 45),
            end=utc(2009, 9, 1, 21, 15),
        )
        ongoing = make_incident(title="Gmail delivery delays", product=gmail, start=NOW - timedelta(hours=1))
        services.incident_post_update(
            incident=ongoing,
            status="identified",
            body="We found the cause. <script>alert(1)</script> [x](javascript:alert(1))",
            display_at=NOW - timedelta(minutes=30),
        )
        make_incident(title="Staff only", product=gmail, start=NOW - timedelta(hours=2), is_public=False)
        make_incident(title="Billing export", product=hidden_product, start=NOW - timedelta(hours=3))
        yield {"resolved": resolved, "ongoing": ongoing}


@pytest.mark.parametrize(("url", "version"), [("/history.atom", "atom10"), ("/history.rss", "rss20")])
def test_it_serves_a_valid_feed_with_one_entry_per_public_incident(
    client: Client,
    incidents,
    url: str,
    version: str,  # type: ignore[no-untyped-def]
) -> None:
    with freeze_time(NOW):
        response = client.get(url)
    assert response.status_code == 200
    parsed = feedparser.parse(response.content)
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    assert parsed.version == version
    titles = [entry.title for entry in parsed.entries]
    # Newest first, each with its latest state.
    assert titles == ["Identified: Gmail delivery delays", "Resolved: Gmail web interface unavailable"]
    first = parsed.entries[0]
    assert first.link.endswith(f"/incidents/{incidents['ongoing'].public_id}/")
    assert "We found the cause." in first.summary
    assert "<script" not in first.summary and "javascript:" not in first.summary
    assert "Gmail" in first.summary  # affected products
    body = response.content.decode()
    assert "Staff only" not in body and "Billing export" not in body and "Internal Billing" not in body


def test_it_links_the_feeds_from_the_pages(client: Client, incidents) -> None:  # type: ignore[no-untyped-def]
    html = client.get("/history/").content.decode()
    assert 'type="application/atom+xml"' in html and 'href="/history.atom"' in html
    assert 'type="application/rss+xml"' in html and 'href="/history.rss"' in html


SITE = "https://status.example.com"
EVIL = "evil.example"
# Namespace and schema addresses a feed format itself names.
_FORMAT_URLS = ("http://www.w3.org/", "https://jsonfeed.org/", "http://purl.org/")


def _absolute_urls(body: str) -> list[str]:
    import re

    # iCalendar folds long lines (CRLF and a space): unfold before looking.
    found = re.findall(r"https?://[^\s\"'<>\\]+", body.replace("\r\n ", ""))
    return [url for url in found if not url.startswith(_FORMAT_URLS)]


def test_every_feed_link_comes_from_site_url_not_the_host(
    client: Client,
    incidents,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    from datetime import timedelta as td

    from incidents.models import ImpactWindow, Incident
    from tests.builders import make_product as product

    settings.SITE_URL = SITE
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, EVIL]
    with freeze_time(NOW):
        services.incident_open(
            title="Network upgrade",
            kind=Incident.Kind.MAINTENANCE,
            impact=Incident.Impact.NONE,
            scheduled_for=NOW + td(days=1),
            scheduled_until=NOW + td(days=1, hours=2),
            windows=[
                services.WindowSpec(
                    product=product("Storage", slug="storage"),
                    level=ImpactWindow.Level.UNDER_MAINTENANCE,
                    started_at=NOW + td(days=1),
                )
            ],
        )
    feeds = [
        "/history.atom",
        "/history.rss",
        "/history.json",
        "/products/gmail/history.json",
        "/maintenance.ics",
    ]
    for url in feeds:
        with freeze_time(NOW):
            # The first reader comes with a forged Host; the feed is then cached for all.
            first = client.get(url, HTTP_HOST=EVIL)
            later = client.get(url)
        for response in (first, later):
            assert response.status_code == 200, url
            body = response.content.decode()
            assert EVIL not in body, url
            links = _absolute_urls(body)
            assert links, url
            assert all(link.startswith(f"{SITE}/") for link in links), (url, links)
