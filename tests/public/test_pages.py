"""The public pages: rollup, grid, uptime, visibility, history, time zone."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import ROUND_DOWN, Decimal

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident
from public_site import history as public_history
from public_site import pages as public_selectors
from tests.builders import make_group, make_incident, make_location, make_product, utc
from tests.public.helpers import add_window, publish_report

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)  # 12:00 PST


@pytest.fixture(autouse=True)
def _frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


def text(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    return response.content.decode()


# --- "/": banner, rollup, groups ---------------------------------------------------------------


def test_it_shows_the_banner_and_each_product_status(client: Client) -> None:
    workspace = make_group("Google Workspace")
    gmail = make_product("Gmail", group=workspace)
    drive = make_product("Google Drive", group=workspace, position=1)
    storage = make_product("Cloud Storage")
    make_incident(
        title="Gmail is slow", product=gmail, start=NOW - timedelta(hours=1), level=Level.PARTIAL_OUTAGE
    )
    make_incident(
        title="Old Drive outage",
        product=drive,
        start=NOW - timedelta(days=2),
        end=NOW - timedelta(days=2, hours=-1),
    )

    html = text(client.get("/"))

    assert "Partial System Outage" in html  # partial outage open -> Statuspage "major"
    assert 'class="banner banner--major"' in html
    assert re.search(r'data-component-name="Gmail">.*?status--partial_outage.*?Partial outage', html, re.S)
    assert re.search(r'data-component-name="Google Drive">.*?status--operational.*?Operational', html, re.S)
    assert re.search(r'data-component-name="Cloud Storage">.*?Operational', html, re.S)
    # Grouped: the group heading, and ungrouped products under "Other services" after it.
    assert (
        html.index("Google Workspace")
        < html.index("Other services")
        < html.index('data-component-name="Cloud Storage"')
    )
    # The active incident with its latest update.
    assert "Active incidents" in html and "Gmail is slow" in html
    active = html.split("Active incidents")[1].split('id="products-title"')[0]
    assert "Gmail is slow" in active and "Old Drive outage" not in active
    assert storage.name in html


def test_it_says_all_systems_operational_when_nothing_is_open(client: Client) -> None:
    gmail = make_product("Gmail")
    make_incident(
        title="Past", product=gmail, start=NOW - timedelta(days=3), end=NOW - timedelta(days=3, minutes=-30)
    )
    html = text(client.get("/"))
    assert "All Systems Operational" in html
    assert "Active incidents" not in html


def test_it_shows_upcoming_and_in_progress_maintenance(client: Client) -> None:
    bigquery = make_product("BigQuery")
    europe = make_location("europe-west1")
    services.incident_open(
        title="BigQuery storage upgrade",
        kind=Incident.Kind.MAINTENANCE,
        impact=Incident.Impact.NONE,
        scheduled_for=NOW + timedelta(days=3),
        scheduled_until=NOW + timedelta(days=3, hours=2),
        windows=[
            services.WindowSpec(
                product=bigquery,
                level=Level.UNDER_MAINTENANCE,
                started_at=NOW + timedelta(days=3),
                ended_at=NOW + timedelta(days=3, hours=2),
                location=europe,
            )
        ],
        body="Storage upgrade.",
    )
    html = text(client.get("/"))
    assert "Scheduled maintenance" in html
    assert "BigQuery storage upgrade" in html
    # A future window does not make the product "under maintenance" yet.
    assert "All Systems Operational" in html
    assert "europe-west1" in html


def test_it_puts_an_incident_crossing_midnight_on_two_grid_days(client: Client) -> None:
    gmail = make_product("Gmail")
    # 23:30 PST on 25 Nov to 00:45 PST on 26 Nov.
    incident = make_incident(
        title="Overnight outage", product=gmail, start=utc(2026, 11, 26, 7, 30), end=utc(2026, 11, 26, 8, 45)
    )
    page = public_selectors.status_page(now=NOW)
    (row,) = page.rows
    days = {d.date.isoformat(): d for d in row.grid}
    assert len(row.grid) == 14
    assert row.grid[-1].date.isoformat() == "2026-11-29"
    assert days["2026-11-25"].level == Level.MAJOR_OUTAGE
    assert days["2026-11-26"].level == Level.MAJOR_OUTAGE
    assert days["2026-11-27"].level == "operational"
    assert [m.public_id for m in days["2026-11-25"].marks] == [incident.public_id]

    html = text(client.get("/"))
    grid = html.split('id="grid-title"')[1].split('id="recent-title"')[0]
    assert grid.count(f'href="/incidents/{incident.public_id}/"') == 2
    # 75 minutes of major outage in the 90 days: uptime below 100 %.
    assert row.uptime.downtime_minutes == 75
    assert row.uptime.percent < 100


def test_it_counts_overlapping_windows_once_in_the_uptime(client: Client) -> None:
    gmail = make_product("Gmail")
    first = make_incident(title="A", product=gmail, start=utc(2026, 11, 1, 10), end=utc(2026, 11, 1, 12))
    add_window(first, gmail, utc(2026, 11, 1, 11), utc(2026, 11, 1, 13), level=Level.MAJOR_OUTAGE)
    second = make_incident(title="B", product=gmail, start=utc(2026, 11, 1, 12, 30), end=utc(2026, 11, 1, 14))
    assert second.pk
    (row,) = public_selectors.status_page(now=NOW).rows
    # 10:00-14:00 is covered by three windows: four hours of major outage, counted once.
    assert row.uptime.downtime_minutes == 240
    period = row.uptime.period_minutes
    assert row.uptime.percent == ((period - 240) / period * 100).quantize(
        row.uptime.percent, rounding=ROUND_DOWN
    )
    html = text(client.get("/"))
    assert f"{row.uptime.percent}" in html


# --- Visibility ------------------------------------------------------------------------------


@pytest.fixture
def mixed():  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    secret_product = make_product("Internal Billing", is_public=False)
    public = make_incident(
        title="Public outage",
        product=gmail,
        start=NOW - timedelta(days=5),
        end=NOW - timedelta(days=5, hours=-1),
    )
    add_window(public, secret_product, NOW - timedelta(days=5), NOW - timedelta(days=5, hours=-1))
    Incident.objects.filter(pk=public.pk).update(internal_notes="TOPSECRET-NOTE")
    services.report_save(incident=public, summary="Draft says DRAFT-ONLY-TEXT.")
    hidden = make_incident(
        title="Staff-only incident", product=gmail, start=NOW - timedelta(hours=2), is_public=False
    )
    private_only = make_incident(
        title="Billing export delayed",
        product=secret_product,
        start=NOW - timedelta(days=1),
        end=NOW - timedelta(hours=20),
    )
    return {"public": public, "hidden": hidden, "private_only": private_only, "gmail": gmail}


def test_it_never_shows_private_things_on_the_status_page(client: Client, mixed) -> None:  # type: ignore[no-untyped-def]
    html = text(client.get("/"))
    for secret in ("Staff-only incident", "Billing export delayed", "Internal Billing", "TOPSECRET-NOTE"):
        assert secret not in html
    # The open window of a non-public incident does not change the public status.
    assert "All Systems Operational" in html


def test_it_never_shows_private_things_on_the_incident_page(client: Client, mixed) -> None:  # type: ignore[no-untyped-def]
    html = text(client.get(f"/incidents/{mixed['public'].public_id}/"))
    assert "Public outage" in html
    for secret in ("Internal Billing", "TOPSECRET-NOTE", "DRAFT-ONLY-TEXT", "Incident report"):
        assert secret not in html
    assert client.get(f"/incidents/{mixed['hidden'].public_id}/").status_code == 404
    assert client.get(f"/incidents/{mixed['private_only'].public_id}/").status_code == 404
    assert client.get("/products/internal-billing/").status_code == 404


def test_it_never_shows_private_things_in_the_history(client: Client, mixed) -> None:  # type: ignore[no-untyped-def]
    html = text(client.get("/history/?month=2026-11"))
    assert "Public outage" in html
    for secret in ("Staff-only incident", "Billing export delayed", "Internal Billing", "TOPSECRET-NOTE"):
        assert secret not in html
    product_html = text(client.get("/products/gmail/"))
    assert "Public outage" in product_html and "Staff-only incident" not in product_html


def test_it_lets_staff_preview_a_non_public_incident(staff_client: Client, mixed) -> None:  # type: ignore[no-untyped-def]
    html = text(staff_client.get(f"/incidents/{mixed['hidden'].public_id}/"))
    assert "Staff preview" in html and "Staff-only incident" in html
    assert "TOPSECRET-NOTE" not in text(staff_client.get(f"/incidents/{mixed['public'].public_id}/"))


def test_it_shows_the_published_report_and_public_action_items(client: Client) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(
        title="Outage", product=gmail, start=utc(2026, 11, 2, 10), end=utc(2026, 11, 2, 11)
    )
    services.action_item_create(incident=incident, title="Add request-router headroom", is_public=True)
    services.action_item_create(incident=incident, title="Private follow-up PRIVATE-ITEM", is_public=False)
    publish_report(
        incident,
        summary="Routers were **overloaded**.",
        root_cause="A routine change <script>alert(1)</script>",
        remediation="More capacity.",
        impact_description="Web users could not sign in.",
    )
    html = text(client.get(f"/incidents/{incident.public_id}/"))
    for heading in ("Summary", "Root cause", "Remediation and prevention", "Detailed description of impact"):
        assert f"<h3>{heading}</h3>" in html
    assert "<strong>overloaded</strong>" in html
    assert "<script>alert" not in html
    assert "Add request-router headroom" in html
    assert "PRIVATE-ITEM" not in html
    assert "Postmortem" in html


def test_it_shows_the_timeline_newest_first_with_times(client: Client) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(title="Outage", product=gmail, start=utc(2026, 11, 2, 10))
    services.incident_post_update(
        incident=incident, status="identified", body="Found it.", display_at=utc(2026, 11, 2, 10, 20)
    )
    services.incident_resolve(incident=incident, body="Fixed it.", resolved_at=utc(2026, 11, 2, 11))
    html = text(client.get(f"/incidents/{incident.public_id}/"))
    assert html.index("Fixed it.") < html.index("Found it.")
    assert '<time datetime="2026-11-02T02:20:00-08:00"' in html  # 10:20 UTC in PST
    assert "All times US/Pacific" in html
    assert "<strong data-total-duration>1 h</strong>" in html


# --- History archive ------------------------------------------------------------------------


def test_it_pages_the_history_by_month(client: Client) -> None:
    gmail = make_product("Gmail")
    make_incident(
        title="Gmail 2009", product=gmail, start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15)
    )
    # 23:30 PST on 31 October? No: 1 Nov 06:30 UTC is 23:30 PDT on 31 Oct: an October incident.
    make_incident(title="Halloween", product=gmail, start=utc(2026, 11, 1, 6, 30), end=utc(2026, 11, 1, 7))
    make_incident(title="November", product=gmail, start=utc(2026, 11, 20, 10), end=utc(2026, 11, 20, 11))

    html = text(client.get("/history/"))  # the current month by default
    assert "November 2026" in html and "November" in html and "Halloween" not in html
    assert 'href="?month=2026-10"' in html  # previous month
    assert 'rel="next"' not in html  # nothing after the current month

    october = text(client.get("/history/?month=2026-10"))
    assert "Halloween" in october and ">November<" not in october.split("Archive")[0]
    assert 'href="?month=2026-11"' in october

    old = text(client.get("/history/?month=2009-09"))
    assert "Gmail 2009" in old and "1 h 30 min" in old
    assert '<time datetime="2009-09-01T12:45:00-07:00"' in old
    # Every month with incidents is one click away.
    for month in ("2009-09", "2026-10", "2026-11"):
        assert f'href="?month={month}"' in old
    assert text(client.get("/history/?month=2009-08")).count("No incidents were reported in August 2009") == 1


@pytest.mark.parametrize("bad", ["2009", "2009-13", "09-2009", "abcd-ef", "2009-9", "0001-01"])
def test_it_refuses_a_bad_month(client: Client, bad: str) -> None:
    assert client.get(f"/history/?month={bad}").status_code == 404


# --- Product page ---------------------------------------------------------------------------


def test_it_shows_product_history_and_uptime(client: Client) -> None:
    storage = make_product("Cloud Storage", slug="cloud-storage")
    other = make_product("Gmail")
    make_incident(
        title="Write errors",
        product=storage,
        start=utc(2026, 10, 8, 11),
        end=utc(2026, 10, 8, 23, 30),
        level=Level.PARTIAL_OUTAGE,
        summary="Writes **failed**.",
    )
    make_incident(title="Gmail thing", product=other, start=utc(2026, 11, 20, 10), end=utc(2026, 11, 20, 11))
    html = text(client.get("/products/cloud-storage/"))
    assert "Write errors" in html and "Gmail thing" not in html
    assert "<strong>failed</strong>" in html
    assert "12 h 30 min" in html
    page = public_history.product_page(slug="cloud-storage", now=NOW)
    periods = {p.days: p.uptime for p in page.uptime_periods}
    assert periods[30].percent == 100
    assert periods[90].downtime_minutes == periods[365].downtime_minutes == 750 * Decimal("0.3")
    assert periods[90].percent < 100 and periods[365].percent > periods[90].percent
    for p in periods.values():
        assert f"{p.percent}" in html
    assert client.get("/products/nope/").status_code == 404
