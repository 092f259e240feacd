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
