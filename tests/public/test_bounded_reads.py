"""Every public read costs the same whatever the length of the history (issue 30, point 1).

The same recent history (1,000 incidents over the last 400 days, with open incidents and
maintenance) is measured twice: alone, then under 9,000 older incidents, all before any
window a page shows (the 365-day uptime, the 12-month report, the newest feed entries,
this month). A page that reads only what it shows reads the same rows both times; one
that scans the history reads about ten times more. Rows are counted by PostgreSQL
(tests/rows.py). Design: docs/adr/0019-bounded-public-reads.md.

    pytest tests/public/test_bounded_reads.py -s    # prints rows read per URL
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from freezegun import freeze_time

from incidents.history_counts import history_counts_rebuild
from incidents.models import ImpactWindow, Incident, IncidentUpdate, Product
from public_site import crawlers
from tests.builders import make_group, make_incident, make_location, make_product, utc
from tests.rows import rows_read

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("postgres")]

NOW = utc(2026, 11, 29, 20, 0)
RECENT_DAYS = 400  # longer than any window a page shows (365 days, 12 months)
OLD_YEARS = 3
LEVELS = ["degraded_performance", "partial_outage", "major_outage"]
# Reads may differ a little between the two histories (a plan's page boundaries, a
# listed month more): at most 20 % and this many rows.
SLACK = 30


def add_incidents(
    count: int, products: list[Product], *, newest: datetime, span: timedelta, tag: str
) -> None:
    """`count` resolved public incidents spread over [newest - span, newest), each with a
    window on one product and a closing update (bench/render_bench.py's shape)."""
    incidents = []
    for i in range(count):
        start = newest - span * ((i * 7919) % count) / count
        incidents.append(
            Incident(
                public_id=f"{tag}{i:010d}",
                title=f"Historical incident {tag}{i}",
                status="resolved",
                impact="minor",
                started_at=start,
                resolved_at=start + timedelta(minutes=10 + i % 110),
            )
        )
    created = Incident.objects.bulk_create(incidents)
    ImpactWindow.objects.bulk_create(
        ImpactWindow(
            incident=inc,
            product=products[n % len(products)],
            level=LEVELS[n % 3],
            started_at=inc.started_at,
            ended_at=inc.resolved_at,
        )
        for n, inc in enumerate(created)
    )
    IncidentUpdate.objects.bulk_create(
        IncidentUpdate(
            incident=inc,
            status="resolved",
            body="Resolved.",
            body_html="<p>Resolved.</p>",
            display_at=inc.resolved_at or inc.started_at,
        )
        for inc in created
    )
    history_counts_rebuild()  # written past the services, so counted again here


def recent_history() -> list[Product]:
    groups = [make_group(f"Group {g}", position=g) for g in range(2)]
    products = [
        make_product(f"Product {i}", position=i, group=groups[i % 2] if i % 3 else None) for i in range(10)
    ]
    make_product("Hidden", is_public=False)
    zone = make_location("us-central1")
    add_incidents(990, products, newest=NOW - timedelta(hours=3), span=timedelta(days=RECENT_DAYS), tag="r")
    for i in range(6):  # open incidents, one with a location
        start = NOW - timedelta(hours=2 + i)
        make_incident(
            title=f"Open incident {i}", product=products[i], start=start, location=zone if i else None
        )
    for i in range(4):
        start = NOW - timedelta(days=3 + i)
        make_incident(
            title=f"Recent incident {i}", product=products[i], start=start, end=start + timedelta(hours=1)
        )
    return products


def urls(product: Product, incident: Incident) -> list[str]:
    slug = product.slug
    month = f"{(NOW - timedelta(days=60)):%Y-%m}"
    return [
        f"/products/{slug}/",
        f"/products/{slug}/?page=2",
        f"/products/{slug}/uptime/",
        f"/products/{slug}/uptime.csv",
        f"/incidents/{incident.public_id}/",
        "/history/",
        f"/history/?month={month}",
        f"/history/?product={slug}",
        f"/history/?month={month}&q=incident",
        "/history.atom",
        "/history.rss",
        "/history.json",
        f"/products/{slug}/history.atom",
        f"/products/{slug}/history.rss",
        f"/products/{slug}/history.json",
        "/api/v2/summary.json",
        "/api/v2/status.json",
        "/api/v2/components.json",
        "/api/v2/incidents.json",
        "/api/v2/incidents/unresolved.json",
        "/api/v2/scheduled-maintenances.json",
        "/api/v2/scheduled-maintenances/upcoming.json",
        "/api/v2/scheduled-maintenances/active.json",
        "/incidents.json",
        "/products.json",
        "/badge.svg",
        f"/products/{slug}/badge.svg",
        "/sitemap.xml",
    ]


def measure(client: Client, addresses: list[str]) -> dict[str, tuple[int, str]]:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner sees the history as a live database would
    out = {}
    for url in addresses:
        cache.clear()  # a real build, not the page cache
        with rows_read() as rows:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        out[url] = (rows.total, rows.top())
    return out


def test_it_reads_the_same_rows_under_ten_times_the_history(client: Client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Fewer than the recent history holds, so both histories fill the sitemap alike.
    monkeypatch.setattr(crawlers, "SITEMAP_MAX_INCIDENTS", 200)
    with freeze_time(NOW):
        products = recent_history()
        incident = Incident.objects.get(title="Recent incident 1")
        addresses = urls(products[1], incident)
        small = measure(client, addresses)
        add_incidents(
            9000,
            products,
            newest=NOW - timedelta(days=RECENT_DAYS),
            span=timedelta(days=365 * OLD_YEARS),
            tag="o",
        )
        big = measure(client, addresses)
    print(f"\n{'rows read':>10} {'1k':>7} {'10k':>7}  URL")
    failures = []
    for url in addresses:
        (before, _), (after, top) = small[url], big[url]
        print(f"{'':>10} {before:>7} {after:>7}  {url}")
        # The archive lists every month that has incidents: one more row per month shown.
        # The month counts hold one row per month and product (11 series with the page's
        # own, and the months the older history adds before the recent one's); a planner
        # that finds the table small reads it whole. It grows with the months of history,
        # never with the incidents in them.
        allowance = 12 * (OLD_YEARS + 1) * 11 if url.startswith("/history/") else 0
        if after > 1.2 * before + SLACK + allowance:
            failures.append(f"{url}: {before} -> {after} rows ({top})")
    assert not failures, "\n".join(failures)
