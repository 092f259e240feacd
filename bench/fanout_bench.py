"""Subscriber fan-out: the staff request at 10 and at N subscribers, the expansion into
outbox rows, and delivery into an SMTP sink by two Celery workers. Needs PostgreSQL and
Redis; the database given is dropped and created again.

    .venv/bin/python bench/fanout_bench.py [--subscribers 1000000] [--expand 100000]
        [--database-url postgres://... --redis-url redis://...]

What it measures and the figures: bench/README.md, "Subscriber fan-out".
"""

from __future__ import annotations

import argparse
import io
import os
import secrets
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.credits_bench import (  # noqa: E402 - after the path is set
    Harness,
    reset_database,
    setup_django,
    sink_and_workers,
    wait_for,
)


def copy_subscribers(start: int, count: int) -> None:
    """Insert `count` confirmed email subscribers with PostgreSQL COPY (seconds for 1M)."""
    from django.db import connection
    from psycopg2 import extensions

    now = datetime.now(UTC).isoformat()
    chunk = 200_000
    # COPY does not work under a psycopg2 wait callback, which the app installs to bound
    # every database call (edge.deadline): lift it for the bulk load, put it back after.
    callback = extensions.get_wait_callback()
    extensions.set_wait_callback(None)
    try:
        _copy(connection, start, count, now, chunk)
    finally:
        extensions.set_wait_callback(callback)


def _copy(connection: Any, start: int, count: int, now: str, chunk: int) -> None:
    with connection.cursor() as cursor:
        for offset in range(start, start + count, chunk):
            buffer = io.StringIO()
            for i in range(offset, min(offset + chunk, start + count)):
                buffer.write(
                    f"email\tfan{i}@subscriber{i % 997}.example\t\tt\t{secrets.token_urlsafe(18)}\t\t"
                    f"{now}\t0\t\\N\t\t{now}\t{now}\tnative\ten\t\n"
                )
            buffer.seek(0)
            cursor.copy_expert(  # type: ignore[attr-defined]
                "COPY subscriptions_subscriber (kind, email, url, all_products, token, secret, confirmed_at,"
                " failure_count, disabled_at, disabled_reason, created_at, updated_at, payload_format, language,"
                " time_zone)"
                " FROM STDIN",
                buffer,
            )
        cursor.execute("ANALYZE subscriptions_subscriber")


def staff_update(incident: object, body: str) -> tuple[float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from incidents import services

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        services.incident_post_update(incident=incident, status="identified", body=body)  # type: ignore[arg-type]
        took = time.perf_counter() - started
    return took, len(queries.captured_queries)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subscribers", type=int, default=1_000_000)
    parser.add_argument("--expand", type=int, default=100_000, help="subscribers to expand and deliver")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/h12_fanout")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--workers", type=int, default=2)
    return parser.parse_args()


def open_incident() -> object:
    from incidents import services as incidents
    from incidents.models import ImpactWindow, Incident, Product

    gmail = Product.objects.create(name="Gmail", slug="gmail")
    at = datetime.now(UTC) - timedelta(minutes=10)
    return incidents.incident_open(
        title="Gmail delivery delays",
        impact=Incident.Impact.MINOR,
        started_at=at,
        windows=[incidents.WindowSpec(product=gmail, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=at)],
        notify=False,
    )


def measure_staff_updates(incident: object, subscribers: int) -> None:
    """The staff request at 10 subscribers, then at `subscribers`: time and queries."""
    copy_subscribers(0, 10)
    staff_update(incident, "Warm-up.")  # first-call costs (templates, connections)
    small_s, small_q = staff_update(incident, "Found the cause.")
    print(f"staff update, 10 subscribers: {small_s * 1000:.1f} ms, {small_q} queries", flush=True)

    t0 = time.perf_counter()
    copy_subscribers(10, subscribers - 10)
    print(f"  COPY {subscribers - 10:,} subscribers in {time.perf_counter() - t0:.1f} s", flush=True)
    large_s, large_q = staff_update(incident, "Fix rolling out.")
    print(
        f"staff update, {subscribers:,} subscribers: {large_s * 1000:.1f} ms, {large_q} queries",
        flush=True,
    )


def measure_expansion(args: argparse.Namespace) -> int:
    """Expands the last event in this process up to `--expand` recipients; returns the rows queued."""
    import redis

    from outbox.models import OutboundMessage
    from subscriptions import notifications
    from subscriptions.models import NotificationEvent

    # Only the last event is expanded (and delivered); the others are dropped.
    event = NotificationEvent.objects.order_by("-pk").first()
    assert event is not None
    NotificationEvent.objects.exclude(pk=event.pk).delete()
    redis.Redis.from_url(args.redis_url).flushdb()
    t0, c0 = time.perf_counter(), time.process_time()
    while notifications.notification_event_expand(event_id=event.pk):
        event.refresh_from_db()
        if event.recipients >= args.expand:
            break
    expand_s, expand_cpu = time.perf_counter() - t0, time.process_time() - c0
    queued = OutboundMessage.objects.count()
    print(
        f"expansion: {queued:,} subscribers queued in {expand_s:.1f} s = {queued / expand_s:,.0f}/s"
        f" ({expand_cpu:.1f} s of this process's CPU = {queued / expand_cpu:,.0f}/s of CPU)",
        flush=True,
    )
    # Stop the expansion here (its next chunk is already queued): the workers only
    # deliver what was expanded, so the delivery rate is measured on its own.
    NotificationEvent.objects.filter(pk=event.pk).update(done_at=datetime.now(UTC))
    return queued


def measure_delivery(args: argparse.Namespace, harness: Harness, queued: int) -> None:
    import redis

    from outbox.models import Destination, MessageState, OutboundMessage
    from outbox.services import outbox_kick

    redis.Redis.from_url(args.redis_url).flushdb()
    # The flush dropped the delivery task the expansion queued: free its reservation.
    Destination.objects.update(kicked_at=None)
    env = {**os.environ, "DATABASE_URL": args.database_url, "REDIS_URL": args.redis_url}
    harness.start_workers(env, args.workers)
    t0 = time.perf_counter()
    outbox_kick(["smtp"])
    wait_for(lambda: harness.counter.value >= queued, 3600, "deliveries")
    wait_for(
        lambda: OutboundMessage.objects.filter(state=MessageState.SENT).count() >= queued,
        300,
        "rows marked sent",
    )
    deliver_s = time.perf_counter() - t0
    print(
        f"deliver: {queued:,} emails in {deliver_s:.1f} s = {queued / deliver_s:,.0f} emails/s",
        flush=True,
    )
    if harness.counter.value != queued:
        print(f"  WARNING: the sink received {harness.counter.value} messages for {queued} rows")


def main() -> None:
    args = parse_args()
    with sink_and_workers() as harness:  # on the way out the workers stop, SIGTERM included
        reset_database(args.database_url)
        setup_django(database_url=args.database_url, redis_url=args.redis_url, smtp_port=harness.port)
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
        incident = open_incident()
        measure_staff_updates(incident, args.subscribers)
        queued = measure_expansion(args)
        measure_delivery(args, harness, queued)


if __name__ == "__main__":
    main()
