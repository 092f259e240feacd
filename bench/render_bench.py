"""Uncached render time and query count of the status page as products (10 to 1,000) and
history (1,000 to 100,000 incidents) grow, each series against its smallest case in the
same run. Queries must stay flat. Cold renders start with an empty cache (no page, no
fragment); the products series also gives the gzip bytes per product and, at its
largest size, the rebuild after a change to one product (its fragments and the page
summary rebuilt, the other products' from the cache) against the cold render.

    .venv/bin/python bench/render_bench.py [--repeat 5] [--series products|history|all]
        [--database-url sqlite:///...] [--clock wall|cpu]

`--clock cpu` times the renders in this process's CPU time (SQLite runs in it): on a
machine shared with other jobs the wall clock mostly measures their load.

The incidents are bulk-loaded behind the services' back, so the per-day summary the page
reads is recounted after each load (`manage.py rebuild_product_days`, not timed).

Figures: bench/README.md, "Uncached render of `/`".
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# The timer of the renders: the wall clock, or this process's CPU time (--clock cpu).
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(database_url: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "statuspage.settings"
    # No prerender thread beside the timings (the page is rendered by the bench itself).
    os.environ.update(
        DEBUG="0", STATIC_MANIFEST="0", DATABASE_URL=database_url, PUBLIC_PRERENDER_ON_CHANGE="0"
    )
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


def measure(repeat: int, *, before: Any = None) -> tuple[float, int, int, int]:
    """Median seconds, queries, bytes and gzip bytes of one render of `/` without the page
    cache, each after `before()` (default: an empty cache, a cold render)."""
    from django.core.cache import cache
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext

    from public_site import views

    view: Any = views.status_index
    if getattr(view, "shed_exempt", False):
        view = view.__wrapped__  # skip the page cache: measure the rebuild itself
    rf = RequestFactory()
    times = []
    queries = size = 0
    for _ in range(repeat):
        (before or cache.clear)()
        with CaptureQueriesContext(connection) as ctx:
            started = clock()
            response = view(rf.get("/"))
            if hasattr(response, "render"):
                response.render()
            times.append(clock() - started)
        assert response.status_code == 200, response.status_code
        queries, size = len(ctx.captured_queries), len(response.content)
    return statistics.median(times), queries, size, len(gzip.compress(response.content))


def change_one_product(products: list, now: datetime) -> Any:
    """A `before` for `measure`: a new incident on one product (through the services, as
    staff would), with the other products' fragments left in the cache."""
    from incidents import services

    count = iter(range(1_000_000))

    def before() -> None:
        n = next(count)
        services.incident_open(
            title=f"Bench change {n}",
            impact="minor",
            started_at=now - timedelta(minutes=30 + n),
            windows=[
                services.WindowSpec(
                    product=products[n % 7],
                    level="partial_outage",
                    started_at=now - timedelta(minutes=30 + n),
                )
            ],
        )

    return before


def recount_days() -> None:
    """The services keep the per-day summary; a bulk load must recount it (not timed)."""
    from django.core.management import call_command

    call_command("rebuild_product_days", stdout=io.StringIO())


def warm() -> None:
    """One render to fill the fragment cache (the page itself is never cached here)."""
    measure(1, before=lambda: None)


def products_series(repeat: int, now: datetime, rows: list) -> None:
    print("series 1: products grow, 1,000 incidents", flush=True)
    for n_products in (10, 100, 1000):
        reset_database()
        products = add_products(n_products)
        add_incidents(1000, products, now)
        recount_days()
        t, q, b, z = measure(repeat)
        rows.append(("products", n_products, 1000, t, q, b))
        print(
            f"  {n_products:>6} products: {t * 1000:8.1f} ms  {q:3d} queries  {b / 1024:7.0f} KiB"
            f"  gzip {z / 1024:6.0f} KiB, {z / n_products:6.0f} B per product",
            flush=True,
        )
    # The largest size: a change to one product, the others' fragments in the cache.
    warm()
    t_change, q_change, _b, _z = measure(repeat, before=change_one_product(products, now))
    cold = rows[-1][3]
    print(
        f"  after one product changed at {len(products)} products: {t_change * 1000:8.1f} ms"
        f"  {q_change:3d} queries, {t_change / cold:.2f} of the cold render",
        flush=True,
    )


def history_series(repeat: int, now: datetime, rows: list) -> None:
    print("series 2: history grows, 100 products", flush=True)
    reset_database()
    products = add_products(100)
    have = 0
    for n_incidents in (1000, 10_000, 100_000):
        add_incidents(n_incidents - have, products, now, offset=have)
        have = n_incidents
        recount_days()
        t, q, b, _z = measure(repeat)
        rows.append(("history", 100, n_incidents, t, q, b))
        print(
            f"  {n_incidents:>6} incidents: {t * 1000:8.1f} ms  {q:3d} queries  {b / 1024:7.0f} KiB",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--series", choices=("products", "history", "all"), default="all")
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench' / 'render.sqlite3'}")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = parser.parse_args()
    global clock  # one setting for the whole run
    clock = CLOCKS[args.clock]
    print(f"clock: {args.clock}", flush=True)
    (ROOT / "var" / "bench").mkdir(parents=True, exist_ok=True)
    setup_django(args.database_url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    now = datetime.now(tz=UTC)
    rows: list = []
    if args.series in ("products", "all"):
        products_series(args.repeat, now, rows)
    if args.series in ("history", "all"):
        history_series(args.repeat, now, rows)

    print()
    print(
        f"{'series':10}{'products':>10}{'incidents':>11}{'ms':>10}{'queries':>9}{'time ratio':>12}{'data ratio':>12}"
    )
    for series in ("products", "history"):
        base = next((r for r in rows if r[0] == series), None)
        for r in (r for r in rows if r[0] == series):
            assert base is not None
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
