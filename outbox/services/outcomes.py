"""Recording a batch's outcomes: sent, due again after a backoff, failed, or held for review.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from edge.counters import counter_add, histogram_observe
from outbox import conf, delivery
from outbox.models import FINAL_STATES, AttemptOutcome, DeliveryAttempt, MessageState, OutboundMessage
from outbox.services.claim import Claim
from outbox.services.handlers import run_handler, run_sent_handlers


def backoff_delay(attempt: int, *, rng: random.Random | None = None) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(n-1))].

    Full jitter spreads a crowd of messages that failed together (an SMTP outage) over
    the whole window, so they do not come back as one burst.
    """
    ceiling = min(conf.retry_max_delay(), conf.retry_base_delay() * (2 ** max(attempt - 1, 0)))
    return (rng or random).uniform(0, ceiling)


def _give_up_age() -> timedelta:
    return timedelta(days=conf.give_up_days())


def _record_unsent(
    row: OutboundMessage, attempt: DeliveryAttempt, result: delivery.Result, now: datetime
) -> None:
    """Every outcome but SENT, one row at a time (the rare path)."""
    outcome, error = result.outcome, result.error
    retry_at: datetime | None = None
    final: str | None = None
    if outcome == delivery.OUTAGE:
        attempt.outcome = AttemptOutcome.OUTAGE
        # The destination was down, not this message: the attempt is given back.
        row.attempts = max(row.attempts - 1, 0)
        if now - row.created_at >= _give_up_age():
            final = MessageState.FAILED
            error = f"{error} (destination unavailable; gave up after {conf.give_up_days():g} days)"
        else:
            # Due again soon, spread out; the breaker decides when anything connects.
            retry_at = now + timedelta(seconds=backoff_delay(1))
    elif outcome == delivery.AMBIGUOUS:
        attempt.outcome = AttemptOutcome.AMBIGUOUS
        row.ambiguous_count += 1
        if row.ambiguous_count >= 2 or row.attempts >= row.max_attempts:
            final = MessageState.REVIEW
            error = f"{error} (sent {row.ambiguous_count} times without a reply: may have been delivered; not resent)"
        else:
            # Resent once: the copy has the same Message-ID, so a receiver can drop it.
            retry_at = now + timedelta(seconds=backoff_delay(row.attempts))
    elif outcome == delivery.TRANSIENT and row.attempts < row.max_attempts:
        attempt.outcome = AttemptOutcome.TRANSIENT
        retry_at = now + timedelta(seconds=backoff_delay(row.attempts))
    else:
        final = MessageState.FAILED
        if outcome == delivery.PERMANENT:
            attempt.outcome = AttemptOutcome.PERMANENT
        else:
            attempt.outcome = AttemptOutcome.TRANSIENT
            error = f"{error} (gave up after {row.attempts} attempts)"
    row.lease_expires_at = None
    row.last_error = error[:2000]
    fields = ["state", "attempts", "ambiguous_count", "lease_expires_at", "last_error", "updated_at"]
    if retry_at is not None:
        row.state = MessageState.PENDING
        row.next_attempt_at = retry_at
        attempt.retry_delay = (retry_at - now).total_seconds()
        fields.append("next_attempt_at")
    else:
        row.state = final or MessageState.FAILED
    row.save(update_fields=fields)
    attempt.save(update_fields=["finished_at", "status_code", "error", "outcome", "retry_delay"])
    if row.state == MessageState.FAILED:
        run_handler(row, "on_failed")


@dataclass
class _Outcomes:
    """What recording a batch writes, sorted by how it is written."""

    sent: list[OutboundMessage] = dataclasses.field(default_factory=list)
    sent_attempts: dict[int | None, list[int]] = dataclasses.field(default_factory=dict)  # by status code
    untried_ids: list[int] = dataclasses.field(default_factory=list)
    untried_attempts: list[int] = dataclasses.field(default_factory=list)
    # Rows recorded one at a time, in batch order; True when someone else finished the row.
    singles: list[tuple[OutboundMessage, DeliveryAttempt, delivery.Result, bool]] = dataclasses.field(
        default_factory=list
    )

    def add_sent(self, row: OutboundMessage, attempt: DeliveryAttempt, result: delivery.Result) -> None:
        self.sent.append(row)
        self.sent_attempts.setdefault(result.status_code, []).append(attempt.pk)


def _sort_results(
    claims: list[Claim],
    results: list[delivery.Result | None],
    rows: dict[int, OutboundMessage],
    now: datetime,
) -> _Outcomes:
    """Decide what each result means for its row and attempt (in memory: nothing written)."""
    out = _Outcomes()
    for (message, attempt), result in zip(claims, results, strict=True):
        row = rows[message.pk]
        if result is None:
            out.untried_attempts.append(attempt.pk)
            if row.state == MessageState.SENDING and row.attempts == attempt.number:
                out.untried_ids.append(row.pk)
            continue
        attempt.finished_at = now
        attempt.status_code = result.status_code
        attempt.error = result.error[:2000]
        if (
            result.outcome == delivery.SENT
            and row.state == MessageState.SENT
            and row.handlers_pending
            and row.attempts == attempt.number
        ):
            # Marked sent by this batch the moment it went out; now its handlers.
            row.handlers_pending = False
            out.add_sent(row, attempt, result)
        elif row.state in FINAL_STATES:
            # Someone else finished it meanwhile (only possible after our lease ran out).
            out.singles.append((row, attempt, result, True))
        elif result.outcome == delivery.SENT:
            row.state = MessageState.SENT
            row.sent_at = row.sent_at or now
            row.lease_expires_at = None
            row.last_error = ""
            out.add_sent(row, attempt, result)
        else:
            out.singles.append((row, attempt, result, False))
    return out


def _write_sent(out: _Outcomes, now: datetime) -> None:
    sent_ids = [row.pk for row in out.sent]
    OutboundMessage.objects.filter(pk__in=sent_ids, sent_at__isnull=True).update(sent_at=now)
    OutboundMessage.objects.filter(pk__in=sent_ids).update(
        state=MessageState.SENT,
        lease_expires_at=None,
        last_error="",
        handlers_pending=False,
        updated_at=now,
    )
    for status_code, attempt_ids in out.sent_attempts.items():
        DeliveryAttempt.objects.filter(pk__in=attempt_ids).update(
            outcome=AttemptOutcome.SENT, finished_at=now, status_code=status_code, error=""
        )
    run_sent_handlers(out.sent)


def _write_outcomes(out: _Outcomes, now: datetime) -> None:
    for row, attempt, result, finished_elsewhere in out.singles:
        if not finished_elsewhere:
            _record_unsent(row, attempt, result, now)
            continue
        attempt.outcome = (
            result.outcome if result.outcome in AttemptOutcome.values else AttemptOutcome.TRANSIENT
        )
        attempt.save(update_fields=["finished_at", "status_code", "error", "outcome"])
    if out.sent:
        _write_sent(out, now)
    if out.untried_ids:
        OutboundMessage.objects.filter(pk__in=out.untried_ids).update(
            state=MessageState.PENDING,
            attempts=F("attempts") - 1,
            lease_expires_at=None,
            next_attempt_at=now,
            updated_at=now,
        )
    if out.untried_attempts:
        DeliveryAttempt.objects.filter(pk__in=out.untried_attempts).delete()


# Seconds from a message's creation to its delivery (/metrics, ops/metrics.py).
LATENCY_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 86400.0)


def _count_outcomes(counts: list[tuple[OutboundMessage, delivery.Result]], now: datetime) -> None:
    for row, result in counts:
        counter_add("outbox_deliveries", channel=row.channel, outcome=result.outcome)
        if result.outcome == delivery.SENT:
            latency = ((row.sent_at or now) - row.created_at).total_seconds()
            histogram_observe(
                "outbox_delivery_latency_seconds", max(latency, 0.0), LATENCY_BUCKETS, channel=row.channel
            )


def messages_record_outcomes(
    claims: list[Claim], results: list[delivery.Result | None]
) -> list[OutboundMessage]:
    """Record a batch's results in one transaction; returns the rows as stored.

    SENT rows are marked with one UPDATE and their handlers run in this transaction (so
    "sent" and its consequences, such as a notice's term date moving, are one fact). A
    message that was not tried (None) goes back as it was, attempt given back.
    """
    now = timezone.now()
    with transaction.atomic():
        rows = OutboundMessage.objects.select_for_update().in_bulk(
            sorted(message.pk for message, _ in claims)
        )
        _write_outcomes(_sort_results(claims, results, rows, now), now)
        counts = [
            (rows[message.pk], result) for (message, _), result in zip(claims, results, strict=True) if result
        ]
        transaction.on_commit(lambda: _count_outcomes(counts, now))
    return [rows[message.pk] for message, _ in claims]
