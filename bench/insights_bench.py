"""Render time and query count of the staff insights page and the public uptime report
with 1,000 and 100,000 incidents (PostgreSQL), spread over ten years or packed into the
page's range, against the Python path and the status page measured in the same run.

    .venv/bin/python bench/insights_bench.py [--repeat 3] [--layouts spread,dense] [--database-url postgres://...]
    .venv/bin/python -m bench.insights_bench --alternate --sizes 100000 --repeat 5  # the dense / spread ratios

Figures: bench/README.md, "Staff insights"; design: docs/adr/0005-insights-sql-path.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/h16_bench"


def setup_django(database_url: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "statuspage.settings"
    # No prerender thread beside the timings (the page is rendered by the bench itself).
    os.environ.update(
        DEBUG="0", STATIC_MANIFEST="0", DATABASE_URL=database_url, PUBLIC_PRERENDER_ON_CHANGE="0"
    )
    os.environ["SECRET_KEY"] = "bench-only"  # noqa: S105 - a throwaway process, never served
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    # Bulk inserts of 100,000 rows take longer than the production statement timeout.
    os.environ["DB_STATEMENT_TIMEOUT_MS"] = "600000"
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


def ensure_database(database_url: str) -> None:
    import psycopg2

    name = database_url.rsplit("/", 1)[1]
    admin = psycopg2.connect(database_url.rsplit("/", 1)[0] + "/postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cur.fetchone() is None:
            cur.execute(f'CREATE DATABASE "{name}"')
    admin.close()


def reset() -> Any:
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from incidents.models import Product, ProductGroup

    call_command("flush", interactive=False, verbosity=0)
    groups = ProductGroup.objects.bulk_create([ProductGroup(name=f"Group {g}", position=g) for g in range(3)])
    Product.objects.bulk_create(
        [
            Product(
                name=f"Product {i}", slug=f"product-{i}", position=i, group=groups[i % 3] if i % 5 else None
            )
            for i in range(20)
        ]
    )
    user = User.objects.create_user("bench", is_staff=True)
    # The insights pages need a role that may read the console (core.roles).
    user.groups.add(Group.objects.get(name="Viewer"))
    return user


def add_incidents(count: int, *, now: datetime, span: timedelta, offset: int = 0) -> None:
    from incidents.models import ActionItem, ImpactWindow, Incident, IncidentUpdate, Product

    products = list(Product.objects.order_by("id"))
    levels = ["degraded_performance", "partial_outage", "major_outage"]
    batch = 5000
    for lo in range(0, count, batch):
        n = min(batch, count - lo)
        incidents = []
        for k in range(lo, lo + n):
            i = offset + k
            start = now - span * ((i * 7919) % 100_000) / 100_000 - timedelta(hours=3)
            incidents.append(
                Incident(
                    public_id=f"i{i:011d}",
                    title=f"Incident {i}",
                    status="resolved",
                    impact="minor",
                    started_at=start,
                    detected_at=start + timedelta(minutes=i % 30),
                    resolved_at=start + timedelta(minutes=20 + i % 160),
                    is_public=i % 10 != 0,
                )
            )
        created = Incident.objects.bulk_create(incidents)
        windows, updates, items = [], [], []
        for inc in created:
            assert inc.resolved_at is not None and inc.detected_at is not None
            windows.append(
                ImpactWindow(
                    incident_id=inc.pk,
                    product=products[inc.pk % len(products)],
                    level=levels[inc.pk % 3],
                    started_at=inc.started_at,
                    ended_at=inc.resolved_at,
                )
            )
            if inc.pk % 4 == 0:  # a second product, part of the time
                windows.append(
                    ImpactWindow(
                        incident_id=inc.pk,
                        product=products[(inc.pk + 7) % len(products)],
                        level="partial_outage",
                        started_at=inc.started_at,
                        ended_at=inc.started_at + (inc.resolved_at - inc.started_at) / 2,
                    )
                )
            for j, at in enumerate(
                (inc.detected_at, inc.detected_at + timedelta(minutes=15), inc.resolved_at)
            ):
                updates.append(
                    IncidentUpdate(
                        incident_id=inc.pk,
                        status=["investigating", "identified", "resolved"][j],
                        body="Update.",
                        display_at=at,
                    )
                )
            items.append(
                ActionItem(
                    incident_id=inc.pk,
                    title="Follow-up",
                    status="done" if inc.pk % 3 else "open",
                    due_date=(inc.started_at + timedelta(days=30)).date(),
                )
            )
        ImpactWindow.objects.bulk_create(windows, batch_size=5000)
        IncidentUpdate.objects.bulk_create(updates, batch_size=5000)
        ActionItem.objects.bulk_create(items, batch_size=5000)


def add_notices(now: datetime) -> None:
    from credits import services
    from credits.models import CreditNotice, SLAPolicy
    from incidents.models import Product

    policy = SLAPolicy.objects.first() or services.policy_create(
        name="Bench", target=Decimal("99.9"), tiers=[(Decimal("99.9"), Decimal(3))]
    )
    product = Product.objects.order_by("id").first()
    assert product is not None
    notices = []
    for c in range(300):
        customer = services.customer_create(
            name=f"Customer {c}", billing_emails=["b@example.org"], policy=policy
        )
        services.customer_entitle(customer=customer, product=product)
        month = (now - timedelta(days=31 * (c % 12))).strftime("%Y-%m")
        notices.append(
            CreditNotice(
                customer=customer,
                policy=policy,
                period=month,
                period_start=now,
                period_end=now,
                period_minutes=Decimal(43200),
                downtime_minutes=Decimal(60),
                uptime_percent=Decimal("99.86"),
                credit=Decimal(3),
                unit="days",
                claim_deadline=now.date(),
                state="sent" if c % 2 else "computed",
                sent_at=now if c % 2 else None,
                computed_at=now,
            )
        )
    CreditNotice.objects.bulk_create(notices)


def measure(user: Any, path: str, repeat: int, *, python_path: bool = False) -> tuple[float, int, int]:
    """Median seconds, queries and bytes of one render. `python_path`: the insights page
    computed in Python (the reference) instead of by the database."""
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext

    from insights import selectors

    if python_path:
        fast = selectors.insights_page_sql
        selectors.insights_page_sql = selectors.insights_page_python  # type: ignore[assignment]
        try:
            return measure(user, path, repeat)
        finally:
            selectors.insights_page_sql = fast  # type: ignore[assignment]

    rf = RequestFactory()
    render(rf, user, path)  # warm: templates compiled, the rows in PostgreSQL's buffers
    times = []
    queries = size = 0
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            response = render(rf, user, path)
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, (path, response.status_code)
        queries, size = len(ctx.captured_queries), len(response.content)
    return statistics.median(times), queries, size


def render(rf: Any, user: Any, path: str) -> Any:
    """One uncached render of `path` as `user`, straight through its view."""
    from insights import views
    from public_site import views as public_views

    request = rf.get(path)
    request.user = user
    if path == "/":
        return public_views.status_index.__wrapped__(request)  # type: ignore[attr-defined]
    if path.startswith("/products/"):
        view: Any = public_views.product_uptime.__wrapped__  # type: ignore[attr-defined]  # skip the page cache
        return view(request, slug=path.split("/")[2])
    return views.insights(request)


def paths() -> tuple[tuple[str, str, bool], ...]:
    """(label, path, python path?) for every filter a user can pick, the report, references."""
    from incidents.models import ProductGroup

    group = ProductGroup.objects.order_by("position").values_list("pk", flat=True)[0]
    return (
        ("all products, by month", "/manage/insights/", False),
        ("all products, by quarter", "/manage/insights/?by=quarter", False),
        ("a group, by month", f"/manage/insights/?scope=group:{group}", False),
        ("a group, by quarter", f"/manage/insights/?scope=group:{group}&by=quarter", False),
        ("one product, by month", "/manage/insights/?scope=product:product-3", False),
        ("one product, by quarter", "/manage/insights/?scope=product:product-3&by=quarter", False),
        ("public uptime report", "/products/product-3/uptime/", False),
        # References, in the same run: the default page by the Python path, and the status
        # page's own uncached render.
        ("ref: Python path, all/month", "/manage/insights/", True),
        ("ref: status page /", "/", False),
    )


INSIGHTS = "all products, by month"
PYTHON_REF = "ref: Python path, all/month"
SPANS = {"spread": timedelta(days=3650), "dense": timedelta(days=330)}

# (layout, incidents, page label, median seconds, queries, bytes)
Row = tuple[str, int, str, float, int, int]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--layouts", default="spread,dense")
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="one database per layout (<database>_spread, <database>_dense), filled once to the "
        "largest size and kept; then the insights pages measured in rounds that alternate the "
        "layouts, so that both see the same load (the ratios of issue 30)",
    )
    args = parser.parse_args()
    if not args.database_url.startswith("postgres"):
        parser.error("this benchmark is for PostgreSQL")
    args.layouts = [name for name in args.layouts.split(",") if name]
    if any(name not in SPANS for name in args.layouts):
        parser.error(f"layouts are {', '.join(SPANS)}")
    args.sizes = [int(s) for s in args.sizes.split(",")]
    return args


def grow_to(size: int, have: int, *, now: datetime, span: timedelta) -> None:
    """Adds incidents up to `size`, then leaves the tables as autovacuum would."""
    from django.db import connection

    from insights.facts import facts_rebuild

    add_incidents(size - have, now=now, span=span, offset=have)
    # Bulk-inserted around the services: the stored facts follow as after any bulk load
    # (`manage.py rebuild_incident_facts`); not part of any measured render.
    started = time.perf_counter()
    facts_rebuild()
    print(f"  facts rebuilt in {time.perf_counter() - started:.1f} s", flush=True)
    # A steady state, as autovacuum would leave it: statistics for the planner, and
    # the visibility map and hint bits set (else the first reads after a bulk
    # insert write every page they touch, and whichever page is measured first
    # pays for it).
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def measure_layout(layout: str, args: argparse.Namespace, now: datetime, loads: list[float]) -> list[Row]:
    """Every page at every size of one layout; the load average after each size."""
    rows: list[Row] = []
    user = reset()
    add_notices(now)
    have = 0
    for size in args.sizes:
        started = time.perf_counter()
        grow_to(size, have, now=now, span=SPANS[layout])
        have = size
        print(f"{layout}: {size:,} incidents inserted in {time.perf_counter() - started:.1f} s", flush=True)
        for label, path, python_path in paths():
            t, q, b = measure(user, path, args.repeat, python_path=python_path)
            rows.append((layout, size, label, t, q, b))
            print(f"  {label:30} {t * 1000:8.1f} ms {q:3d} queries {b / 1024:7.0f} KiB", flush=True)
        loads.append(os.getloadavg()[0])
    return rows


def print_table(rows: list[Row]) -> None:
    print()
    print(f"{'layout':8}{'incidents':>10}  {'page':30}{'ms':>9}{'queries':>9}{'KiB':>7}{'x smallest':>12}")
    for r in rows:
        base = next(x for x in rows if x[0] == r[0] and x[2] == r[2])
        print(
            f"{r[0]:8}{r[1]:>10,}  {r[2]:30}{r[3] * 1000:>9.1f}{r[4]:>9}{r[5] / 1024:>7.0f}{r[3] / base[3]:>12.2f}"
        )
    print()
    for label, _, _ in paths():
        counts = sorted({r[4] for r in rows if r[2] == label})
        print(
            f"queries for {label!r} at every size: {counts} ({'constant' if len(counts) == 1 else 'GROWS'})"
        )


def print_references(rows: list[Row], loads: list[float]) -> None:
    print()
    for r in rows:
        if r[2] != INSIGHTS:
            continue
        same = {x[2]: x[3] for x in rows if x[0] == r[0] and x[1] == r[1]}
        print(
            f"{r[0]} {r[1]:,}: default insights page {r[3] * 1000:.0f} ms = "
            f"{r[3] / same[PYTHON_REF]:.3f} x the Python path ({same[PYTHON_REF] * 1000:.0f} ms), "
            f"{r[3] / same['ref: status page /']:.2f} x the status page render"
        )
    print(
        f"load average (1 min) after each layout and size: {', '.join(f'{x:.1f}' for x in loads)} (2 cores)"
    )


def print_ratios(rows: list[Row], sizes: list[int]) -> None:
    """Issue 30's bar: each insights page, dense over spread at the largest size, same run."""
    at = {(r[0], r[2]): r[3] for r in rows if r[1] == max(sizes)}
    for label, _, python_path in paths():
        if python_path or not label.startswith(("all", "a ", "one")) or ("dense", label) not in at:
            continue
        if ("spread", label) in at:
            ratio = at[("dense", label)] / at[("spread", label)]
            print(
                f"dense / spread at {max(sizes):,}, {label}: {ratio:.2f} ({'within' if ratio <= 1.5 else 'OVER'} 1.5)"
            )


def print_slowest(rows: list[Row], layouts: list[str], sizes: list[int]) -> None:
    for layout in layouts:
        pages = [
            r for r in rows if r[0] == layout and r[1] == max(sizes) and r[2].startswith(("all", "a ", "one"))
        ]
        worst = max(pages, key=lambda r: r[3])
        print(
            f"{layout}: slowest insights render at {max(sizes):,} incidents: {worst[3] * 1000:.0f} ms "
            f"({worst[2]}; {'under' if worst[3] < 1 else 'OVER'} one second)"
        )


def use_database(name: str) -> None:
    """Point the default connection at another database of the same server."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


def alternate(args: argparse.Namespace, now: datetime) -> None:
    """Fill (once) a database per layout, then time every insights filter in rounds
    alternating the layouts: one render per page per round, the median over rounds."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import RequestFactory

    from incidents.models import Incident

    size = max(args.sizes)
    base = args.database_url.rsplit("/", 1)[1]
    for layout in args.layouts:
        ensure_database(f"{args.database_url}_{layout}")
        use_database(f"{base}_{layout}")
        call_command("migrate", verbosity=0)
        if Incident.objects.count() != size or not User.objects.filter(username="bench").exists():
            started = time.perf_counter()
            reset()
            add_notices(now)
            grow_to(size, 0, now=now, span=SPANS[layout])
            print(
                f"{layout}: {size:,} incidents inserted in {time.perf_counter() - started:.1f} s", flush=True
            )
    pages = [(label, path) for label, path, python_path in paths() if label.startswith(("all", "a ", "one"))]
    rf = RequestFactory()
    times: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.repeat + 1):  # the first round warms up, untimed
        for layout in args.layouts:
            use_database(f"{base}_{layout}")
            user = User.objects.get(username="bench")
            for label, path in pages:
                started = time.perf_counter()
                response = render(rf, user, path)
                elapsed = time.perf_counter() - started
                assert response.status_code == 200, (path, response.status_code)
                if round_:
                    times.setdefault((layout, label), []).append(elapsed)
        print(f"round {round_} done, load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\n{'page':30}" + "".join(f"{layout:>12}" for layout in args.layouts) + "  dense / spread")
    for label, _ in pages:
        medians = {layout: statistics.median(times[(layout, label)]) for layout in args.layouts}
        line = f"{label:30}" + "".join(f"{medians[layout] * 1000:>9.0f} ms" for layout in args.layouts)
        if {"dense", "spread"} <= set(medians):
            ratio = medians["dense"] / medians["spread"]
            line += f"  {ratio:.2f} ({'within' if ratio <= 1.5 else 'OVER'} 1.5)"
        print(line)


def main() -> None:
    args = parse_args()
    if args.alternate:
        ensure_database(args.database_url)
        setup_django(args.database_url)
        alternate(args, datetime.now(tz=UTC))
        return
    ensure_database(args.database_url)
    setup_django(args.database_url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    now = datetime.now(tz=UTC)
    rows: list[Row] = []
    loads: list[float] = []
    for layout in args.layouts:
        rows += measure_layout(layout, args, now, loads)
    print_table(rows)
    print_references(rows, loads)
    print_slowest(rows, args.layouts, args.sizes)
    print_ratios(rows, args.sizes)


if __name__ == "__main__":
    main()
