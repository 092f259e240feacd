"""Acceptance with the demo data (`manage.py load_demo`)."""

from __future__ import annotations

import io
import re

import feedparser
import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from incidents.models import Incident
from public_site import pages as public_selectors

pytestmark = pytest.mark.django_db

# October 2026 is inside the 90 days that `/` shows on this day.
TODAY = "2026-11-29 20:00:00"


@pytest.fixture
def demo() -> None:
    with freeze_time(TODAY):
        call_command("load_demo", stdout=io.StringIO())


def cloud_storage_incident() -> Incident:
    return (
        Incident.objects.filter(
            windows__product__slug="cloud-storage", started_at__year=2026, started_at__month=10
        )
        .distinct()
        .get()
    )


def test_it_shows_the_october_cloud_storage_incident_in_the_uptime_bars(client: Client, demo: None) -> None:
    incident = cloud_storage_incident()
    with freeze_time(TODAY):
        html = client.get("/").content.decode()
        page = public_selectors.status_page(now=timezone.now())
    row = next(r for r in page.rows if r.product.slug == "cloud-storage")
    marked = {d.date.isoformat(): d.level for d in row.days if d.impacted}
    # 04:00 PDT 8 Oct to 09:46 PDT 9 Oct: both days carry the incident.
    assert marked["2026-10-08"] == marked["2026-10-09"] == "partial_outage"
    assert row.uptime.percent < 100

    product = html.split('data-component-name="Cloud Storage"')[1].split("</li>")[0]
    assert "Partial outage 2 days" in product  # the card's bars say the days' levels
    assert f"<strong>{row.uptime.percent}&nbsp;%</strong> uptime" in product
    with freeze_time(TODAY):
        page_html = client.get("/products/cloud-storage/").content.decode()
    bars = re.findall(
        r'<a class="bar bar--(\w+)" href="/incidents/(\w+)/"[^>]*data-date="([\d-]+)"', page_html
    )
    assert ("partial_outage", incident.public_id, "2026-10-08") in bars
    assert ("partial_outage", incident.public_id, "2026-10-09") in bars
    assert row.uptime.percent < 100


def test_it_shows_both_windows_and_the_total_duration(client: Client, demo: None) -> None:
    incident = cloud_storage_incident()
    with freeze_time(TODAY):
        html = client.get(f"/incidents/{incident.public_id}/").content.decode()
    assert "<strong data-total-duration>18 h 11 min</strong>" in html
    windows = re.findall(r'<tr class="window">(.*?)</tr>', html, re.S)
    assert len(windows) == 2
    assert "us-central1" in windows[0] and "12 h 30 min" in windows[0]
    assert "us-central1-b" in windows[1] and "5 h 41 min" in windows[1]
    assert "Incident report" in html and "Root cause" in html


def test_it_lists_the_2009_gmail_incident_in_the_archive(client: Client, demo: None) -> None:
    with freeze_time(TODAY):
        html = client.get("/history/?month=2009-09").content.decode()
        archive = client.get("/history/").content.decode()
    assert "Gmail web interface unavailable" in html
    assert "1 h 30 min" in html
    assert 'href="?month=2009-09"' in archive  # reachable from the default month


def test_it_lists_the_demo_incidents_in_the_feeds(client: Client, demo: None) -> None:
    with freeze_time(TODAY):
        parsed = feedparser.parse(client.get("/history.atom").content)
    assert parsed.bozo == 0
    titles = " ".join(entry.title for entry in parsed.entries)
    assert "Gmail web interface unavailable" in titles
    assert "Cloud Storage" in titles
    assert "Billing" not in titles  # the demo's staff-only product stays off the feed
