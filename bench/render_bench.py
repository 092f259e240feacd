"""Uncached render time and query count of the status page as products (10 to 1,000) and
history (1,000 to 100,000 incidents) grow, each series against its smallest case in the
same run. Queries must stay flat.

    .venv/bin/python bench/render_bench.py [--repeat 5] [--series history] [--database-url sqlite:///...]

The incidents are bulk-loaded behind the services' back, so the per-day summary the page
reads is recounted after each load (`manage.py rebuild_product_days`, not timed).

Figures: bench/README.md, "Uncached render of `/`".
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(database_url: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "statuspage.settings"
    os.environ.update(DEBUG="0", STATIC_MANIFEST="0", DATABASE_URL=database_url)
    os.environ["SECRET_KEY"] = "bench-only"  # noqa: S105 - a throwaway process, never served
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


def reset_database() -> None:
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0)


def add_products(count: int) -> list:
    from incidents.models import Product, ProductGroup

    groups = ProductGroup.objects.bulk_create([ProductGroup(name=f"Group {g}", position=g) for g in range(5)])
    start = Product.objects.count()
    Product.objects.bulk_create(
        [
            Product(name=f"Product {i}", slug=f"product-{i}", position=i, group=groups[i % len(groups)])
            for i in range(start, start + count)
        ]
    )
    return list(Product.objects.order_by("id"))


def add_incidents(count: int, products: list, now: datetime, offset: int = 0) -> None:
    """`count` resolved incidents over the last three years, newest first in id order."""
    from incidents.models import ImpactWindow, Incident, IncidentUpdate

    levels = ["degraded_performance", "partial_outage", "major_outage"]
    span = timedelta(days=3 * 365)
    batch = 5000
    for lo in range(0, count, batch):
        n = min(batch, count - lo)
        incidents = []
        for k in range(lo, lo + n):
            i = offset + k
            start = now - span * ((i * 7919) % 100_000) / 100_000 - timedelta(hours=2)
            incidents.append(
                Incident(
                    public_id=f"b{i:011d}",
                    title=f"Historical incident {i}",
                    status="resolved",
                    impact="minor",
                    started_at=start,
                    resolved_at=start + timedelta(minutes=10 + i % 110),
                )
            )
        Incident.objects.bulk_create(incidents)
        created = Incident.objects.filter(public_id__in=[x.public_id for x in incidents]).only(
            "id", "started_at", "resolved_at"
        )
        windows, updates = [], []
        for inc in created:
            product = products[inc.id % len(products)]
            windows.append(
                ImpactWindow(
                    incident_id=inc.id,
                    product=product,
                    level=levels[inc.id % 3],
                    started_at=inc.started_at,
                    ended_at=inc.resolved_at,
                )
            )
            updates.append(
                IncidentUpdate(
                    incident_id=inc.id,
                    status="resolved",
                    body="Resolved.",
                    body_html="<p>Resolved.</p>",
                    display_at=inc.resolved_at or inc.started_at,
                )
            )
        ImpactWindow.objects.bulk_create(windows)
        IncidentUpdate.objects.bulk_create(updates)


def recount_days() -> None:
    """The services keep the per-day summary; a bulk load must recount it (not timed)."""
    from django.core.management import call_command

    call_command("rebuild_product_days", stdout=io.StringIO())


def measure_data(repeat: int) -> float:
    """Median seconds of the page's reads alone (`status_page`), without the template."""
    from django.utils import timezone

    from public_site import pages

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        pages.status_page(now=timezone.now())
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(repeat: int) -> tuple[float, int, int]:
    """Median seconds, queries and bytes of one uncached render of `/`."""
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext

    from public_site import views

    view: Any = views.status_index
    if getattr(view, "shed_exempt", False):
        view = view.__wrapped__  # skip the page cache: measure the rebuild itself
    rf = RequestFactory()
    view(rf.get("/"))  # warm up: templates compiled and translations loaded once per process
    times = []
    queries = size = 0
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            response = view(rf.get("/"))
            if hasattr(response, "render"):
                response.render()
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
        queries, size = len(ctx.captured_queries), len(response.content)
    return statistics.median(times), queries, size


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--series", choices=("both", "products", "history"), default="both", help="run one series only"
    )
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench' / 'render.sqlite3'}")
    args = parser.parse_args()
    (ROOT / "var" / "bench").mkdir(parents=True, exist_ok=True)
    setup_django(args.database_url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    now = datetime.now(tz=UTC)
    rows = []
    data: list[float] = []

    print("series 1: products grow, 1,000 incidents", flush=True)
    for n_products in (10, 100, 1000) if args.series != "history" else ():
        reset_database()
        products = add_products(n_products)
        add_incidents(1000, products, now)
        recount_days()
        t, q, b = measure(args.repeat)
        rows.append(("products", n_products, 1000, t, q, b))
        print(
            f"  {n_products:>6} products: {t * 1000:8.1f} ms  {q:3d} queries  {b / 1024:7.0f} KiB", flush=True
        )

    print("series 2: history grows, 100 products", flush=True)
    reset_database()
    products = add_products(100)
    have = 0
    for n_incidents in (1000, 10_000, 100_000) if args.series != "products" else ():
        add_incidents(n_incidents - have, products, now, offset=have)
        have = n_incidents
        recount_days()
        t, q, b = measure(args.repeat)
        rows.append(("history", 100, n_incidents, t, q, b))
        data.append(measure_data(args.repeat))
        print(
            f"  {n_incidents:>6} incidents: {t * 1000:8.1f} ms  {q:3d} queries  {b / 1024:7.0f} KiB"
            f"  (reads alone: {data[-1] * 1000:.1f} ms, ratio {data[-1] / data[0]:.2f})",
            flush=True,
        )

    print()
    print(
        f"{'series':10}{'products':>10}{'incidents':>11}{'ms':>10}{'queries':>9}{'time ratio':>12}{'data ratio':>12}"
    )
    for series in {r[0]: None for r in rows}:
        base = next(r for r in rows if r[0] == series)
        for r in (r for r in rows if r[0] == series):
            print(
                f"{r[0]:10}{r[1]:>10}{r[2]:>11}{r[3] * 1000:>10.1f}{r[4]:>9}"
                f"{r[3] / base[3]:>12.2f}{r[2] / base[2] if series == 'history' else r[1] / base[1]:>12.0f}"
            )
    flat = len({r[4] for r in rows}) == 1
    print(
        f"\nqueries per render constant across all sizes: {'yes' if flat else 'NO'} ({sorted({r[4] for r in rows})})"
    )


if __name__ == "__main__":
    main()
