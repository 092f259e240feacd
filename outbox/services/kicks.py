"""Kicks: "deliver this destination" tasks, at most one waiting in the broker per destination.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

# The project's app, reached without importing the project shell: Celery's Django fixup
# makes it the default app of every thread once Django starts.
from celery import current_app
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from outbox import conf, delivery
from outbox.models import Destination

logger = logging.getLogger(__name__)

# After a failed publish, skip publishing for a while: a process that just waited on a
# dead broker does not wait again on every commit. The rows are durable; the sweeper
# queues their tasks once the broker is back.
BROKER_BACKOFF_SECONDS = 5.0
_broker_down_until = 0.0


class _PendingKicks:
    """The destinations a transaction queued rows for, kicked once after its commit."""

    def __init__(self) -> None:
        self.destinations: set[str] = set()
        self.fired = False
        self.index = -1

    def __call__(self) -> None:
        self.fired = True
        outbox_kick(sorted(self.destinations))


def _still_pending(pending: _PendingKicks) -> bool:
    if pending.fired:
        return False
    callbacks = connection.run_on_commit
    if 0 <= pending.index < len(callbacks) and callbacks[pending.index][1] is pending:
        return True
    # A savepoint rollback shortens the list; a full rollback empties it.
    return any(entry[1] is pending for entry in callbacks)


def kick_on_commit(destination: str) -> None:
    """Kick `destination` once the caller's transaction commits (at once outside one)."""
    if not connection.in_atomic_block:
        outbox_kick([destination])
        return
    # One kick per destination per transaction (keyed by the savepoint stack, so a test
    # transaction wrapping several services still kicks after each of them).
    scope = tuple(connection.savepoint_ids)
    registry: dict[tuple[str, ...], _PendingKicks] = connection.__dict__.setdefault("_outbox_kicks", {})
    pending = registry.get(scope)
    if pending is None or not _still_pending(pending):
        pending = _PendingKicks()
        transaction.on_commit(pending, robust=True)
        pending.index = len(connection.run_on_commit) - 1
        registry[scope] = pending
    pending.destinations.add(destination)


def eager() -> bool:
    # In-process mode has no worker: a kick delivers right here, and retries wait for
    # the sweeper (beat or the outbox_sweep command).
    return bool(current_app.conf.task_always_eager)


def _reserve_kicks(destinations: list[str], now: datetime) -> list[str]:
    """The destinations without a task waiting in the broker, now marked as having one."""
    lost = now - timedelta(seconds=conf.kick_lost_seconds())
    free = (
        Q(kicked_at__isnull=True)
        | Q(kick_taken_at__isnull=False, kick_taken_at__gte=F("kicked_at"))
        | Q(kicked_at__lt=lost)
    )
    reserved = []
    for key in destinations:
        # The conditional UPDATE is the reservation: of two processes kicking one
        # destination, one queues the task.
        if Destination.objects.filter(free, key=key).update(kicked_at=now) == 1:
            reserved.append(key)
            continue
        _, created = Destination.objects.get_or_create(key=key, defaults={"kicked_at": now})
        if created:
            reserved.append(key)
    return reserved


def _publish(calls: list[tuple[Any, tuple[Any, ...]]]) -> int:
    """Send tasks with one short try; returns how many went out (a prefix of `calls`)."""
    global _broker_down_until

    if not calls:
        return 0
    if time.monotonic() < _broker_down_until:
        logger.info("outbox: broker recently unreachable; %s task(s) left for the sweeper", len(calls))
        return 0
    timeout = conf.publish_timeout()
    deadline = time.monotonic() + timeout
    sent = 0
    try:
        # Its own connection with short socket timeouts and no retries: a broker that
        # accepts connections but never answers costs this request `timeout`, not the
        # app-wide timeouts the workers use.
        options = {
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "max_retries": 0,
        }
        with current_app.connection_for_write(connect_timeout=timeout, transport_options=options) as conn:
            producer = current_app.amqp.Producer(conn, auto_declare=False)
            for task, args in calls:
                if time.monotonic() > deadline:
                    break
                task.apply_async(args, producer=producer, retry=False)
                sent += 1
    except Exception:
        _broker_down_until = time.monotonic() + BROKER_BACKOFF_SECONDS
        logger.warning(
            "outbox: could not publish %s task(s); the sweeper will retry", len(calls) - sent, exc_info=True
        )
    return sent


def publish_task(task: Any, args: tuple[Any, ...]) -> bool:
    """Queue one task the way the outbox does after a commit: one short try, no retries.

    For callers above the outbox (the fan-out) that must not hold a request on a broker
    that hangs; they need their own sweep for a task that did not go out.
    """
    if eager():
        task.apply_async(args)
        return True
    return _publish([(task, args)]) == 1


def _task_for(destination: str) -> Any:
    from outbox import tasks

    return tasks.deliver_emails if destination == delivery.SMTP_DESTINATION else tasks.deliver_webhooks


def outbox_kick(destinations: Iterable[str]) -> int:
    """Ask a worker to deliver what is due at each destination; returns tasks queued."""
    # Delivery kicks again after a full batch: imported here, the two modules call each other.
    from outbox.services.deliver import destination_drain

    destinations = list(dict.fromkeys(destinations))
    if not destinations:
        return 0
    if eager():
        for destination in destinations:
            destination_drain(destination=destination)
        return len(destinations)
    now = timezone.now()
    reserved = _reserve_kicks(destinations, now)
    sent = _publish([(_task_for(d), (d,)) for d in reserved])
    if sent < len(reserved):
        # Not queued after all: free the reservation so the next sweep queues it.
        Destination.objects.filter(key__in=reserved[sent:], kicked_at=now).update(kicked_at=None)
    return sent


def outbox_kick_taken(*, destination: str) -> None:
    """A worker took the destination's task: the next kick may queue another."""
    Destination.objects.filter(key=destination).update(kick_taken_at=timezone.now())
