"""The sweeper (beat, every minute): fail what keeps killing its worker, finish what a lost
worker sent, and queue a task for each destination with due rows.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from outbox import conf
from outbox.models import (
    AttemptOutcome,
    CircuitState,
    DeliveryAttempt,
    Destination,
    MessageState,
    OutboundMessage,
)
from outbox.services.handlers import run_handler
from outbox.services.kicks import outbox_kick


@dataclass(frozen=True)
class SweepResult:
    requeued: int
    reclaimed: int
    failed: int
    kicked: int = 0


def outbox_sweep(*, now: datetime | None = None, limit: int | None = None) -> SweepResult:
    """Queue delivery where rows are due; fail what used up its budget by crashing.

    Bounded: one task per destination at most (none while one is already waiting, or
    while the breaker is open), and at most `limit` destinations per run.
    """
    now = now or timezone.now()
    limit = limit or conf.sweep_batch()
    failed = _fail_exhausted(now, limit)
    _finish_orphaned(now, limit)
    requeued, reclaimed, kicked = _kick_due(now, limit)
    return SweepResult(requeued=requeued, reclaimed=reclaimed, failed=failed, kicked=kicked)


def _lock_or_skip(pk: int) -> OutboundMessage | None:
    """The row, locked; None if another session holds it (a worker recording its outcome,
    another sweeper): the sweep passes over it and the next one looks again, so one row
    kept locked never stalls the sweep of every destination (bench/README.md, soak)."""
    return OutboundMessage.objects.select_for_update(skip_locked=True).filter(pk=pk).first()


def _fail_exhausted(now: datetime, limit: int) -> int:
    """Leases that ran out with no attempts left: the message kills its worker (or the
    worker keeps dying); stop and show it to staff instead of looping forever."""
    failed = 0
    exhausted = OutboundMessage.objects.filter(
        state=MessageState.SENDING, lease_expires_at__lt=now, attempts__gte=F("max_attempts")
    ).values_list("pk", flat=True)[:limit]
    for pk in list(exhausted):
        with transaction.atomic():
            row = _lock_or_skip(pk)
            if (
                row is None
                or row.state != MessageState.SENDING
                or row.lease_expires_at is None
                or row.lease_expires_at >= now
            ):
                continue
            row.state = MessageState.FAILED
            row.lease_expires_at = None
            row.last_error = f"delivery interrupted {row.attempts} times (worker lost); not retrying"
            row.save(update_fields=["state", "lease_expires_at", "last_error", "updated_at"])
            DeliveryAttempt.objects.filter(message=row, outcome=AttemptOutcome.STARTED).update(
                outcome=AttemptOutcome.LOST, finished_at=now, error="worker lost before recording an outcome"
            )
            run_handler(row, "on_failed")
            failed += 1
    return failed


def _finish_orphaned(now: datetime, limit: int) -> None:
    """Sent, but the worker died before it recorded the batch: the handlers still run,
    once (the flag is cleared in the same transaction)."""
    orphaned = OutboundMessage.objects.filter(
        state=MessageState.SENT,
        handlers_pending=True,
        updated_at__lt=now - timedelta(seconds=conf.lease_seconds()),
    ).values_list("pk", flat=True)[:limit]
    for pk in list(orphaned):
        with transaction.atomic():
            row = _lock_or_skip(pk)
            if row is None or not row.handlers_pending:
                continue
            row.handlers_pending = False
            row.save(update_fields=["handlers_pending", "updated_at"])
            DeliveryAttempt.objects.filter(message=row, outcome=AttemptOutcome.STARTED).update(
                outcome=AttemptOutcome.SENT, finished_at=now, error="recorded by the sweeper (worker lost)"
            )
            run_handler(row, "on_sent")


def _kick_due(now: datetime, limit: int) -> tuple[int, int, int]:
    """(rows due, expired leases, tasks queued) for the destinations with either."""
    reclaimable = OutboundMessage.objects.filter(
        state=MessageState.SENDING, lease_expires_at__lt=now, attempts__lt=F("max_attempts")
    )
    due = OutboundMessage.objects.filter(state=MessageState.PENDING, next_attempt_at__lte=now)
    reclaimed = len(reclaimable.values_list("pk", flat=True)[:limit])
    requeued = len(due.values_list("pk", flat=True)[:limit])
    # order_by(): the model's default ordering would make DISTINCT run over more columns.
    destinations = set(reclaimable.order_by().values_list("destination", flat=True).distinct()[:limit])
    destinations |= set(due.order_by().values_list("destination", flat=True).distinct()[:limit])
    # No task while the breaker holds the destination shut: it would only wait there.
    shut = set(
        Destination.objects.filter(
            key__in=destinations, state=CircuitState.OPEN, open_until__gt=now
        ).values_list("key", flat=True)
    )
    kicked = outbox_kick(sorted(destinations - shut)[:limit])
    return requeued, reclaimed, kicked
