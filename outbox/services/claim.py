"""Claims: take due rows for one attempt each, under a lease, so one worker sends each.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from outbox import conf
from outbox.models import AttemptOutcome, DeliveryAttempt, MessageBody, MessageState, OutboundMessage


def _claimable(now: datetime) -> Q:
    return Q(state=MessageState.PENDING, next_attempt_at__lte=now) | Q(
        state=MessageState.SENDING, lease_expires_at__lt=now
    )


Claim = tuple[OutboundMessage, DeliveryAttempt]


def messages_claim(
    *, destination: str | None = None, ids: list[int] | None = None, limit: int
) -> list[Claim]:
    """Take up to `limit` due rows for one attempt each (the oldest first).

    On PostgreSQL the rows are locked with FOR UPDATE SKIP LOCKED, so workers claiming
    the same destination at once get disjoint batches without waiting on each other; the
    UPDATE then starts a lease and counts the attempt. SQLite has no row locks (writers
    are serialised): there a conditional UPDATE per row decides, as it always did.
    """
    now = timezone.now()
    lease_until = now + timedelta(seconds=conf.lease_seconds())
    with transaction.atomic():
        claim = _claim_statement if connection.vendor == "postgresql" else _claim_rows
        rows = claim(destination=destination, ids=ids, limit=limit, now=now, lease_until=lease_until)
        if not rows:
            return []
        # Shared bodies once each, not once per row (a batch is usually one letter).
        bodies = MessageBody.objects.in_bulk({row.body_id for row in rows if row.body_id is not None})
        for row in rows:
            if row.body_id is not None:
                row.body = bodies[row.body_id]
        # An attempt left 'started' by a killed worker is now known to be lost.
        DeliveryAttempt.objects.filter(
            message_id__in=[row.pk for row in rows], outcome=AttemptOutcome.STARTED
        ).update(
            outcome=AttemptOutcome.LOST, finished_at=now, error="worker lost before recording an outcome"
        )
        attempts = DeliveryAttempt.objects.bulk_create(
            [DeliveryAttempt(message=row, number=row.attempts, started_at=now) for row in rows]
        )
    return list(zip(rows, attempts, strict=True))


def _claim_rows(
    *, destination: str | None, ids: list[int] | None, limit: int, now: datetime, lease_until: datetime
) -> list[OutboundMessage]:
    """The claim through the ORM (SQLite and the like): lock where the backend can, then
    a conditional UPDATE; returns the claimed rows, oldest first."""
    claim_fields = {
        "state": MessageState.SENDING,
        "lease_expires_at": lease_until,
        "attempts": F("attempts") + 1,
        "updated_at": now,
    }
    due = OutboundMessage.objects.filter(_claimable(now), attempts__lt=F("max_attempts"))
    if destination is not None:
        due = due.filter(destination=destination)
    if ids is not None:
        due = due.filter(pk__in=ids)
    due = due.order_by("next_attempt_at", "pk")
    if connection.features.has_select_for_update_skip_locked:
        picked = list(due.select_for_update(skip_locked=True).values_list("pk", flat=True)[:limit])
        if picked:
            OutboundMessage.objects.filter(pk__in=picked).update(**claim_fields)
    else:
        picked = [
            pk
            for pk in due.values_list("pk", flat=True)[:limit]
            if OutboundMessage.objects.filter(_claimable(now), pk=pk, attempts__lt=F("max_attempts")).update(
                **claim_fields
            )
            == 1
        ]
    by_pk = OutboundMessage.objects.in_bulk(picked)
    return [by_pk[pk] for pk in picked]


def _claim_statement(
    *, destination: str | None, ids: list[int] | None, limit: int, now: datetime, lease_until: datetime
) -> list[OutboundMessage]:
    """The PostgreSQL claim in ONE statement: lock due rows (SKIP LOCKED), start their
    lease, count the attempt, and return them, oldest first."""
    table = OutboundMessage._meta.db_table
    where = [
        "((state = %s AND next_attempt_at <= %s) OR (state = %s AND lease_expires_at < %s))",
        "attempts < max_attempts",
    ]
    params: list[Any] = [MessageState.PENDING, now, MessageState.SENDING, now]
    if destination is not None:
        where.append("destination = %s")
        params.append(destination)
    if ids is not None:
        where.append("id = ANY(%s)")
        params.append(list(ids))
    sql = (
        f"UPDATE {table} SET state = %s, lease_expires_at = %s, attempts = attempts + 1, updated_at = %s "  # noqa: S608 - constant names; values are parameters
        f"WHERE id IN (SELECT id FROM {table} WHERE {' AND '.join(where)} "
        "ORDER BY next_attempt_at, id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING *"
    )
    rows = list(OutboundMessage.objects.raw(sql, [MessageState.SENDING, lease_until, now, *params, limit]))
    return sorted(rows, key=lambda row: (row.next_attempt_at, row.pk))


def message_claim(*, message_id: int) -> Claim | None:
    """Take one row for one attempt, or None when it is not ours to send now.

    Of two workers holding the same id (a duplicate task, a sweep racing a retry),
    exactly one gets it.
    """
    claimed = messages_claim(ids=[message_id], limit=1)
    return claimed[0] if claimed else None
