"""SLA credit throughput: compute notices for N customers, approve M, deliver them to an
SMTP sink, each against a same-run reference (SQL alone for the approve step, a bare
smtplib loop for delivery). The database given is dropped and created again.

    .venv/bin/python bench/credits_bench.py [--customers 100000] [--deliver 10000]
        [--database-url postgres://... --redis-url redis://...]

What it measures and the figures: bench/README.md, "SLA credits".
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal as D
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# --- SMTP sink in its own process (so it does not share the GIL with the sender) -----------------


def _sink_main(port: int, counter: Any, ready: Any) -> None:
    import asyncio

    from aiosmtpd.controller import Controller

    class Counting:
        async def handle_DATA(self, _server: Any, _session: Any, _envelope: Any) -> str:
            with counter.get_lock():
                counter.value += 1
            return "250 OK"

    controller = Controller(Counting(), hostname="127.0.0.1", port=port)
    controller.start()
    ready.set()
    signal.signal(signal.SIGTERM, lambda *a: (controller.stop(), os._exit(0)))
    asyncio.run(asyncio.sleep(10**6))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


# --- Database ------------------------------------------------------------------------------------


def reset_database(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.startswith("sqlite"):
        Path(parts.path).unlink(missing_ok=True)
        return
    import psycopg2

    name = parts.path.lstrip("/")
    admin = psycopg2.connect(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password,
        dbname="postgres",
    )
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cur.execute(f'CREATE DATABASE "{name}"')
    admin.close()


def setup_django(*, database_url: str, redis_url: str, smtp_port: int) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "statuspage.settings"
    os.environ.update(
        DEBUG="0",
        SECRET_KEY="bench-only",  # noqa: S106 - a throwaway process
        STATIC_MANIFEST="0",
        ALLOWED_HOSTS="localhost",
        DATABASE_URL=database_url,
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(smtp_port),
        LOG_LEVEL="WARNING",
        # A long statement is fine here: the compute writes 100k rows in one transaction.
        DB_STATEMENT_TIMEOUT_MS="600000",
    )
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def open_incidents(gmail: Any, storage: Any, zone: Any) -> None:
    """September 2009: a 90-minute Gmail outage and a Cloud Storage one in one zone."""
    from incidents import services as incident_services
    from incidents.models import ImpactWindow

    start, end = datetime(2009, 9, 1, 19, 45, tzinfo=UTC), datetime(2009, 9, 1, 21, 15, tzinfo=UTC)
    gmail_incident = incident_services.incident_open(
        title="Gmail web interface unavailable",
        impact="major",
        started_at=start,
        windows=[
            incident_services.WindowSpec(
                product=gmail, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=start
            )
        ],
        notify=False,
    )
    incident_services.incident_resolve(incident=gmail_incident, resolved_at=end, notify=False)
    s_start, s_end = datetime(2009, 9, 8, 11, 0, tzinfo=UTC), datetime(2009, 9, 8, 23, 30, tzinfo=UTC)
    storage_incident = incident_services.incident_open(
        title="Cloud Storage writes failing in us-central1-b",
        impact="major",
        started_at=s_start,
        windows=[
            incident_services.WindowSpec(
                product=storage,
                location=zone,
                level=ImpactWindow.Level.PARTIAL_OUTAGE,
                started_at=s_start,
            )
        ],
        notify=False,
    )
    incident_services.incident_resolve(incident=storage_incident, resolved_at=s_end, notify=False)


def build_data(customers: int) -> None:
    from credits import services
    from credits.models import Customer, CustomerEntitlement
    from incidents.models import Location, Product

    gmail = Product.objects.create(name="Gmail", slug="gmail")
    storage = Product.objects.create(name="Cloud Storage", slug="cloud-storage")
    region = Location.objects.create(name="us-central1", kind=Location.Kind.REGION)
    zones = [
        Location.objects.create(name=f"us-central1-{z}", kind=Location.Kind.ZONE, parent=region)
        for z in "abcf"
    ]
    europe = Location.objects.create(name="europe-west1", kind=Location.Kind.REGION)
    open_incidents(gmail, storage, zones[1])
    workspace = services.policy_create(
        name="Workspace",
        target=D("99.9"),
        tiers=[(D("99.9"), D(3)), (D("99.0"), D(7)), (D("95.0"), D(15))],
        min_downtime_minutes=10,
    )
    gcs = services.policy_create(
        name="Cloud Storage",
        target=D("99.9"),
        tiers=[(D("99.9"), D(10)), (D("99.0"), D(25)), (D("95.0"), D(50))],
        unit="percent",
        cap=D(50),
    )
    places = [None, region, *zones, europe]
    batch: list[Customer] = []
    for i in range(customers):
        storage_customer = i % 3 == 2
        batch.append(
            Customer(
                name=f"Customer {i:06d}",
                billing_emails=[f"billing{i}@customer{i}.example"],
                policy=gcs if storage_customer else workspace,
                term_end_date=date(2010, 1, 31),
                monthly_bill=D("1000.00"),
            )
        )
    created = Customer.objects.bulk_create(batch, batch_size=5000)
    entitlements = []
    for i, customer in enumerate(created):
        if i % 3 == 2:
            entitlements.append(
                CustomerEntitlement(customer=customer, product=storage, location=places[i % len(places)])
            )
        else:
            entitlements.append(CustomerEntitlement(customer=customer, product=gmail))
    CustomerEntitlement.objects.bulk_create(entitlements, batch_size=5000)


def approve_floor(ids: list[int]) -> float:
    """Seconds the database takes to write what approving `ids` wrote (after the approve
    step ran): the notices locked, one email row per notice copied under a new key, the
    notices updated, the deferred checks run; then rolled back."""
    from django.db import connection, transaction

    from outbox.services import _COLUMNS

    columns = ", ".join(f'"{c}"' for c in _COLUMNS)
    copied = columns.replace('"idempotency_key"', "\"idempotency_key\" || ':floor'")
    array = "{" + ",".join(map(str, ids)) + "}"
    with transaction.atomic(), connection.cursor() as cursor:
        t0 = time.perf_counter()
        cursor.execute(
            "SELECT n.id, c.name, c.billing_emails FROM credits_creditnotice n "
            "JOIN credits_customer c ON c.id = n.customer_id WHERE n.id = ANY(%s::int[]) FOR UPDATE OF n",
            [array],
        )
        cursor.fetchall()
        cursor.execute(
            f"INSERT INTO outbox_outboundmessage ({columns}) SELECT {copied} FROM outbox_outboundmessage "  # noqa: S608 - names from the model
            "WHERE id IN (SELECT message_id FROM credits_creditnotice WHERE id = ANY(%s::int[]))",
            [array],
        )
        cursor.execute(
            "UPDATE credits_creditnotice SET state = 'queued', approved_at = now(), updated_at = now(), "
            "message_id = message_id, email_message_id = email_message_id, claim_deadline = claim_deadline "
            "WHERE id = ANY(%s::int[])",
            [array],
        )
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        elapsed = time.perf_counter() - t0
        transaction.set_rollback(True)
    return elapsed


def start_workers(env: dict[str, str], count: int) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    celery = str(Path(sys.executable).with_name("celery"))
    logs_dir = Path(tempfile.mkdtemp(prefix="credits-bench-"))
    procs, logs = [], []
    for n in range(count):
        path = logs_dir / f"worker{n}.log"
        log = open(path, "wb")  # noqa: SIM115 - the child owns it
        cmd = [celery, "-A", "statuspage", "worker", "-c", "2", "--without-gossip", "--without-mingle"]
        cmd += ["--without-heartbeat", "--loglevel=INFO", f"--hostname=bench{n}@%h"]
        cmd += ["--queues=email,webhooks,periodic"]
        env = {**env, "LOG_LEVEL": "WARNING"}
        procs.append(
            subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )
        logs.append(path)
    return procs, logs


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--deliver", type=int, default=10_000)
    parser.add_argument("--database-url", default="sqlite:////tmp/credits_bench.sqlite3")
    parser.add_argument(
        "--redis-url", default="", help="with PostgreSQL: deliver through real Celery workers"
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2 prefork children each)")
    args = parser.parse_args()
    if args.redis_url and args.database_url.startswith("sqlite"):
        raise SystemExit("worker mode needs PostgreSQL (--database-url postgres://...)")
    return args


@dataclass
class Harness:
    """The SMTP sink's port and delivery counter, and the Celery workers started so far."""

    port: int
    counter: Any
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_workers(self, env: dict[str, str], count: int) -> None:
        procs, logs = start_workers(env, count)
        self.procs += procs
        wait_for(lambda: all(b" ready." in p.read_bytes() for p in logs), 60, "workers")


@contextmanager
def sink_and_workers() -> Iterator[Harness]:
    """An SMTP sink in its own process; on the way out, the workers and the sink stop."""
    # A SIGTERM (or `timeout`) still stops the workers: the finally below runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    port = free_port()
    counter = multiprocessing.Value("l", 0)
    ready = multiprocessing.Event()
    sink = multiprocessing.Process(target=_sink_main, args=(port, counter, ready), daemon=True)
    sink.start()
    ready.wait(10)
    harness = Harness(port, counter)
    try:
        yield harness
    finally:
        for proc in harness.procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in harness.procs:
            proc.wait(30)
        sink.terminate()
        sink.join(5)


def measure_build(customers: int) -> None:
    print(f"building {customers:,} customers ...", flush=True)
    t0 = time.perf_counter()
    build_data(customers)
    print(f"  built in {time.perf_counter() - t0:.1f} s")


def measure_compute() -> None:
    from credits import services

    t0 = time.perf_counter()
    summary = services.credits_compute(period="2009-09")
    compute_s = time.perf_counter() - t0
    print(
        f"compute: {summary.customers_considered:,} customers, {summary.created:,} notices in {compute_s:.1f} s "
        f"= {summary.customers_considered / compute_s:,.0f} customers/s, {summary.created / compute_s:,.0f} notices/s"
    )
    t0 = time.perf_counter()
    again = services.credits_compute(period="2009-09")
    print(
        f"  recompute (idempotent, {again.unchanged:,} unchanged, {again.created} created): {time.perf_counter() - t0:.1f} s"
    )


def measure_approve(args: argparse.Namespace, ids: list[int]) -> None:
    from credits import services
    from credits.models import CreditNotice
    from statuspage.celery import app

    if args.redis_url:
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
    else:
        # Approval publishes to an in-memory broker nobody reads; delivery is timed
        # separately below, through the same service the task runs.
        app.conf.task_always_eager = False
    # Phase 1: approve and queue, in one call as the console's confirmed send makes it
    # (the service works through the ids a chunk at a time, in one transaction).
    t0 = time.perf_counter()
    services.credits_approve_and_send(
        confirmed=True,  # the benchmark is the confirmation
        notices=CreditNotice.objects.filter(pk__in=ids),
    )
    approve_s = time.perf_counter() - t0
    print(f"approve+queue: {len(ids):,} notices in {approve_s:.2f} s = {len(ids) / approve_s:,.0f} notices/s")
    if not args.database_url.startswith("sqlite"):
        floor_s = approve_floor(ids)
        print(
            f"  the same rows by SQL alone (reference, rolled back): {floor_s:.2f} s = "
            f"{len(ids) / floor_s:,.0f} notices/s; approve+queue / SQL alone: {floor_s / approve_s:.2f}"
        )


def measure_deliver(args: argparse.Namespace, harness: Harness, ids: list[int]) -> float:
    """Phase 2: deliver, through the workers or in this process. Returns emails/s."""
    from credits.models import CreditNotice
    from outbox.models import MessageState, OutboundMessage
    from outbox.services import message_deliver

    mode = "celery workers + redis" if args.redis_url else "in-process (message_deliver, no broker)"
    if args.redis_url:
        env = {**os.environ, "DATABASE_URL": args.database_url, "REDIS_URL": args.redis_url}
        harness.start_workers(env, args.workers)
        t0 = time.perf_counter()
    else:
        t0 = time.perf_counter()
        for pk in OutboundMessage.objects.filter(state=MessageState.PENDING).values_list("pk", flat=True):
            message_deliver(message_id=pk)
    wait_for(lambda: harness.counter.value >= len(ids), 1800, "deliveries")
    wait_for(
        lambda: not CreditNotice.objects.filter(pk__in=ids, state="queued").exists(),
        120,
        "notices marked sent",
    )
    deliver_s = time.perf_counter() - t0
    sent = CreditNotice.objects.filter(pk__in=ids, state="sent").count()
    outbox_rate = sent / deliver_s
    print(f"deliver ({mode}): {sent:,} notices sent in {deliver_s:.1f} s = {outbox_rate:,.0f} emails/s")
    if harness.counter.value != sent:
        print(f"  WARNING: the sink received {harness.counter.value} messages for {sent} sent notices")
    return outbox_rate


def measure_bare_loop(harness: Harness, ids: list[int], outbox_rate: float) -> None:
    """Reference: the same messages, one connection, a bare loop."""
    from credits.models import CreditNotice
    from outbox import delivery
    from outbox.models import OutboundMessage

    payloads = []
    for message in OutboundMessage.objects.filter(
        pk__in=CreditNotice.objects.filter(pk__in=ids).values("message_id")
    ).select_related("body"):
        # Exactly the bytes the outbox sends (built from the shared body once per letter).
        payloads.append(delivery.email_bytes(message))
    before = harness.counter.value
    t0 = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", harness.port) as smtp:
        for from_addr, rcpts, raw in payloads:
            smtp.sendmail(from_addr, rcpts, raw)
    wait_for(lambda: harness.counter.value >= before + len(payloads), 600, "bare loop")
    bare_s = time.perf_counter() - t0
    bare_rate = len(payloads) / bare_s
    print(
        f"bare smtplib loop, one connection: {len(payloads):,} emails in {bare_s:.1f} s = {bare_rate:,.0f} emails/s"
    )
    print(f"ratio outbox / bare loop: {outbox_rate / bare_rate:.2f}")


def main() -> None:
    args = parse_args()
    with sink_and_workers() as harness:
        reset_database(args.database_url)
        setup_django(database_url=args.database_url, redis_url=args.redis_url, smtp_port=harness.port)
        from credits.models import CreditNotice

        measure_build(args.customers)
        measure_compute()
        ids = list(CreditNotice.objects.order_by("pk").values_list("pk", flat=True)[: args.deliver])
        measure_approve(args, ids)
        outbox_rate = measure_deliver(args, harness, ids)
        measure_bare_loop(harness, ids, outbox_rate)


if __name__ == "__main__":
    main()
