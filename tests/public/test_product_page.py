"""A product's page (issue 29): its status per location, its feeds and badge with the code
to embed it, "subscribe to this product" (the subscribe form preselects it), and on an
incident page "subscribe to updates on this incident" through its products."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents.models import ImpactWindow, Location
from public_site.locations import location_statuses
from tests.builders import make_incident, make_location, make_product, utc
from tests.public.helpers import add_window

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)


@pytest.fixture(autouse=True)
def _frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


def text(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def places() -> dict[str, Location]:
    world = make_location("global", kind=Location.Kind.GLOBAL)
    central = make_location("us-central1", parent=world)
    east = make_location("us-east1", parent=world)
    return {
        "global": world,
        "us-central1": central,
        "us-east1": east,
        "us-central1-b": make_location("us-central1-b", kind=Location.Kind.ZONE, parent=central),
        "us-central1-c": make_location("us-central1-c", kind=Location.Kind.ZONE, parent=central),
    }


def location_rows(html: str) -> list[tuple[str, str]]:
    """(place, level) of each row of the status-by-location list, in order."""
    return re.findall(
        r'<li class="location location--depth-\d"><span class="location__name">([^<]+)</span> '
        r'<span class="status status--(\w+)"',
        html,
    )


def test_it_shows_each_location_with_a_zone_only_where_it_differs(
    client: Client, places: dict[str, Location]
) -> None:
    storage = make_product("Cloud Storage")
    make_incident(
        title="Writes fail in one zone",
        product=storage,
        start=NOW - timedelta(hours=1),
        level=Level.PARTIAL_OUTAGE,
        location=places["us-central1-b"],
    )

    html = text(client.get("/products/cloud-storage/"))

    assert location_rows(html) == [
        ("global", "operational"),
        ("us-central1", "operational"),
        ("us-central1-b", "partial_outage"),
        ("us-east1", "operational"),
    ]
    assert "location--depth-2" in html  # the zone is indented under its region
    assert "us-central1-c" not in html  # a zone like its region is not listed


def test_it_applies_an_all_locations_window_to_every_place(
    client: Client, places: dict[str, Location]
) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(
        title="Gmail slow everywhere",
        product=gmail,
        start=NOW - timedelta(hours=1),
        level=Level.DEGRADED_PERFORMANCE,
    )
    # A worse window in one region on top of it, and one that has ended (it counts no more).
    add_window(
        incident, gmail, NOW - timedelta(minutes=30), level=Level.MAJOR_OUTAGE, location=places["us-east1"]
    )
    add_window(
        incident,
        gmail,
        NOW - timedelta(hours=3),
        NOW - timedelta(hours=2),
        level=Level.MAJOR_OUTAGE,
        location=places["us-central1"],
    )

    rows = location_rows(text(client.get("/products/gmail/")))

    assert rows == [
        ("global", "degraded_performance"),
        ("us-central1", "degraded_performance"),
        ("us-east1", "major_outage"),
    ]


def test_it_reads_the_tree_without_a_query_and_survives_a_loop(places: dict[str, Location]) -> None:
    # Two places whose parents point at each other: no root leads to them, yet both appear.
    a = make_location("loop-a")
    b = make_location("loop-b", parent=a)
    Location.objects.filter(pk=a.pk).update(parent=b)
    catalogue = list(Location.objects.order_by("name"))
    rows = location_statuses(windows=[], locations=catalogue, now=NOW)
    names = [r.location.name for r in rows]
    assert {"loop-a", "loop-b"} <= set(names)
    assert names[:2] == ["global", "us-central1"]
    assert all(r.level == "operational" for r in rows)


def test_it_shows_no_location_section_without_locations(client: Client) -> None:
    make_product("Gmail")
    html = text(client.get("/products/gmail/"))
    assert "Status by location" not in html


def test_it_links_the_products_feeds_badge_and_embed_code(client: Client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SITE_URL = "https://status.example.com"
    make_product("Gmail")

    html = text(client.get("/products/gmail/"))

    for path in ("history.atom", "history.rss", "history.json", "badge.svg"):
        assert f'href="/products/gmail/{path}"' in html or f'src="/products/gmail/{path}"' in html
        assert client.get(f"/products/gmail/{path}").status_code == 200
    # The code to paste, shown as text (escaped), absolute on SITE_URL.
    assert (
        '<pre class="embed-code"><code>&lt;a href=&quot;https://status.example.com/products/gmail/&quot;&gt;'
        "&lt;img src=&quot;https://status.example.com/products/gmail/badge.svg&quot; "
        "alt=&quot;Gmail status&quot; height=&quot;20&quot;&gt;&lt;/a&gt;</code></pre>"
    ) in html


def test_it_subscribes_to_the_product_with_it_preselected(client: Client) -> None:
    make_product("Gmail")
    make_product("Google Drive", position=1)

    html = text(client.get("/products/gmail/"))
    assert 'href="/subscribe/?product=gmail"' in html
    french = text(client.get("/fr/products/gmail/"))
    assert 'href="/fr/subscribe/?product=gmail"' in french

    form = text(client.get("/subscribe/?product=gmail"))
    assert re.search(r'<input type="radio" name="scope" value="some"[^>]* checked', form)
    assert re.search(
        r'<input type="checkbox" name="products" value="\d+"[^>]* checked[^>]*>\s*<label[^>]*>Gmail', form
    )
    assert not re.search(r"checked[^>]*>\s*<label[^>]*>Google Drive", form)


@pytest.mark.parametrize("query", ["?product=nope", "?product=%00", "?product=" + "x" * 300, "?product="])
def test_it_ignores_a_preselection_that_names_no_product(client: Client, query: str) -> None:
    make_product("Gmail")
    form = text(client.get("/subscribe/" + query))
    assert re.search(r'<input type="radio" name="scope" value="all"[^>]* checked', form)
    assert not re.search(r'name="products"[^>]* checked', form)


def test_the_incident_page_subscribes_through_the_products_it_affects(client: Client) -> None:
    gmail = make_product("Gmail")
    drive = make_product("Google Drive", position=1)
    hidden = make_product("Billing", is_public=False, position=2)
    incident = make_incident(title="Mail and files slow", product=gmail, start=NOW - timedelta(hours=1))
    add_window(incident, drive, NOW - timedelta(hours=1))
    add_window(incident, hidden, NOW - timedelta(hours=1))

    html = text(client.get(f"/incidents/{incident.public_id}/"))

    link = re.search(
        r'<p class="incident__subscribe"><a class="action-link" href="([^"]+)">([^<]+)</a>', html
    )
    assert link is not None
    assert link.group(1) == "/subscribe/?product=gmail&amp;product=google-drive"  # never the staff-only one
    assert link.group(2) == "Subscribe to updates on this incident"
    assert "you will also hear of their other incidents" in html
    form = text(client.get("/subscribe/?product=gmail&product=google-drive"))
    assert len(re.findall(r'name="products"[^>]* checked', form)) == 2
