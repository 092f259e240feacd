"""Each public page is built in a fixed number of queries, however much data there is."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_group, make_incident, make_location, make_product, utc
from tests.public.helpers import add_window, publish_report

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)


def build(n_products: int, n_incidents: int, *, prefix: str) -> Incident:
    """Products in groups, incidents with several windows, updates, reports, action items."""
    groups = [make_group(f"{prefix} group {i}", position=i) for i in range(2)]
    zone = make_location(f"{prefix}-zone")
    products = [
        make_product(f"{prefix} product {i}", group=groups[i % 2] if i % 3 else None, position=i)
        for i in range(n_products)
    ]
    make_product(f"{prefix} hidden", is_public=False)
    last = None
    for i in range(n_incidents):
        product = products[i % n_products]
        start = NOW - timedelta(days=1 + (i * 7) % 80, hours=i % 5)
        incident = make_incident(
            title=f"{prefix} incident {i}", product=product, start=start, level=Level.PARTIAL_OUTAGE
        )
        add_window(incident, products[(i + 1) % n_products], start, start + timedelta(hours=1), location=zone)
        services.incident_post_update(incident=incident, status="identified", body=f"Update {i}")
        if i % 4 == 0:
            continue  # left open
        services.incident_resolve(incident=incident, resolved_at=start + timedelta(hours=2))
        incident.refresh_from_db()
        if i % 2:
            services.action_item_create(incident=incident, title=f"Fix {i}", is_public=True)
            publish_report(incident, summary=f"Report {i}")
        last = incident
    assert last is not None
    return last


def count_queries(client: Client, url: str) -> int:
    cache.clear()  # measure a real build, not the page cache
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(ctx.captured_queries)


PAGES: dict[str, Callable[[Incident, str], str]] = {
    "index": lambda incident, prefix: "/",
    "incident": lambda incident, prefix: f"/incidents/{incident.public_id}/",
    "product": lambda incident, prefix: f"/products/{prefix}-product-1/",
    "history": lambda incident, prefix: "/history/",
    "atom": lambda incident, prefix: "/history.atom",
    "rss": lambda incident, prefix: "/history.rss",
}


@pytest.mark.parametrize("page", list(PAGES))
def test_it_builds_each_page_in_a_fixed_number_of_queries(
    client: Client,
    django_assert_num_queries,  # type: ignore[no-untyped-def]
    page: str,
) -> None:
    with freeze_time(NOW):
        small = build(n_products=2, n_incidents=4, prefix="a")
        expected = count_queries(client, PAGES[page](small, "a"))
        # Ten times the data on top: more products, groups, incidents, windows, updates.
        big = build(n_products=20, n_incidents=40, prefix="b")
        cache.clear()
        with django_assert_num_queries(expected):
            assert client.get(PAGES[page](big, "b")).status_code == 200
    # On top of the 8 every other page keeps to: the product page lists its open public
    # commitments (the items, then their history in one prefetch: 10); the incident page
    # reads a published report's public timeline entries and the incident's links (9);
    # `/` reads the grid days' incidents apart from the bars' days and sums the uptime
    # figures in SQL (incidents.daily.page_days: 10 with open incidents).
    assert expected <= {"product": 10, "incident": 9, "index": 10}.get(page, 8)
