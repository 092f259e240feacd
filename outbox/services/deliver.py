"""Delivery of one destination's batch: ask the breaker, claim, send, record, go on.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from outbox import conf, delivery
from outbox.models import Channel, MessageState, OutboundMessage
from outbox.services.breaker import (
    Gate,
    breaker_failure,
    breaker_gate,
    breaker_release_probe,
    breaker_success,
)
from outbox.services.claim import Claim, messages_claim
from outbox.services.kicks import eager, outbox_kick
from outbox.services.outcomes import messages_record_outcomes

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchResult:
    claimed: int = 0
    sent: int = 0
    deferred: bool = False  # the breaker said no
    outage: bool = False
    full: bool = False
    probe: bool = False


@contextlib.contextmanager
def _commit_without_waiting() -> Iterator[None]:
    """PostgreSQL: the per-message "sent" marks of a batch commit without waiting for the
    WAL flush (`synchronous_commit = off` for this session while the batch is sent).

    The trade-off, chosen: should the database SERVER crash, the marks of the last
    fraction of a second (up to 3 x wal_writer_delay) may be lost, and those messages go
    out once more, with the same Message-ID, when their lease runs out. A worker that
    dies loses nothing (the server still writes the commit), and the batch's recording
    afterwards commits synchronously, which flushes every mark before it.
    """
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        # Inside a transaction the marks are not commits of their own anyway.
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO OFF")
    try:
        yield
    finally:
        # A connection that broke meanwhile is replaced, with the default, on next use.
        with contextlib.suppress(Exception), connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def _send_batch(claims: list[Claim]) -> list[delivery.Result | None]:
    messages = [message for message, _ in claims]
    # Half the lease: the last message started before it still finishes well inside the
    # lease, so no other worker can reclaim a row of this batch while it is being sent.
    deadline = time.monotonic() + conf.lease_seconds() / 2

    table = connection.ops.quote_name(OutboundMessage._meta.db_table)
    mark = (
        f"UPDATE {table} SET state = %s, sent_at = %s, lease_expires_at = NULL, "  # noqa: S608 - a constant name; values are parameters
        "handlers_pending = %s, updated_at = %s WHERE id = %s AND state = %s AND attempts = %s"
    )

    def mark_sent(index: int) -> None:
        # At once, in its own statement: should the worker die before the batch is
        # recorded, only the message it was on can go out twice, never the whole batch.
        # A plain UPDATE (the ORM's query building cost more than the statement).
        message, attempt = claims[index]
        now = timezone.now()
        with connection.cursor() as cursor:
            cursor.execute(
                mark, [MessageState.SENT, now, True, now, message.pk, MessageState.SENDING, attempt.number]
            )

    if messages[0].channel == Channel.EMAIL:
        with _commit_without_waiting():
            return delivery.send_email_batch(messages, on_sent=mark_sent, deadline=deadline)
    results: list[delivery.Result | None] = [None] * len(messages)
    for index, message in enumerate(messages):
        if index and time.monotonic() > deadline:
            break  # the rest goes back, see above
        results[index] = result = delivery.send_webhook(message)
        if result.outcome == delivery.SENT:
            mark_sent(index)
        if result.outcome == delivery.OUTAGE:
            break  # the host is down: do not knock again for every message
    return results


def _send_or_report(destination: str, claims: list[Claim]) -> list[delivery.Result | None]:
    try:
        return _send_batch(claims)
    except Exception as exc:
        logger.exception("outbox: unexpected error delivering to %s", destination)
        results: list[delivery.Result | None] = [
            delivery.Result(delivery.TRANSIENT, None, f"{type(exc).__name__}: {exc}")
        ]
        return results + [None] * (len(claims) - 1)


def _feed_breaker(
    destination: str, gate: Gate, results: list[delivery.Result | None]
) -> delivery.Result | None:
    """Tell the breaker how the destination answered; returns the outage, if any."""
    outage = next((r for r in results if r is not None and r.outcome == delivery.OUTAGE), None)
    answered = any(
        r is not None and r.outcome in (delivery.SENT, delivery.TRANSIENT, delivery.PERMANENT)
        for r in results
    )
    if outage is not None:
        breaker_failure(destination=destination, error=outage.error, probe=gate.probe)
    elif answered:
        breaker_success(destination=destination, gate=gate)
    return outage


def _goes_on(gate: Gate, results: list[delivery.Result | None], outage: delivery.Result | None) -> bool:
    # The probe went through, or the session died before the end of the batch: go on.
    return outage is None and (gate.probe or None in results)


def _count_sent(results: list[delivery.Result | None]) -> int:
    return sum(1 for r in results if r is not None and r.outcome == delivery.SENT)


def destination_deliver(
    *, destination: str, ids: list[int] | None = None, limit: int | None = None
) -> BatchResult:
    """Deliver one batch of due messages to `destination`, over one session."""
    gate = breaker_gate(destination=destination)
    if not gate.allowed:
        return BatchResult(deferred=True)
    size = 1 if gate.probe else (limit or conf.batch_size())
    claims = messages_claim(destination=destination, ids=ids, limit=size)
    if not claims:
        if gate.probe:
            breaker_release_probe(destination=destination)
        return BatchResult()
    full = len(claims) == size and not gate.probe and ids is None
    if full and not eager():
        # More is due: queue the next batch now, so another worker sends it meanwhile.
        outbox_kick([destination])
    results = _send_or_report(destination, claims)
    messages_record_outcomes(claims, results)
    outage = _feed_breaker(destination, gate, results)
    if _goes_on(gate, results, outage) and not eager():
        outbox_kick([destination])
    return BatchResult(
        claimed=len(claims),
        sent=_count_sent(results),
        outage=outage is not None,
        full=full,
        probe=gate.probe,
    )


def destination_drain(*, destination: str, max_batches: int = 10_000) -> int:
    """In-process delivery (no worker): batches until nothing due is left; returns sent."""
    sent = 0
    for _ in range(max_batches):
        result = destination_deliver(destination=destination)
        sent += result.sent
        # A short batch took everything due; a failed probe or an outage stops here too.
        if not result.claimed or result.outage or not (result.full or result.probe):
            break
    return sent


def message_deliver(*, message_id: int) -> OutboundMessage | None:
    """One delivery attempt for one message. None when the row was not claimable now."""
    destination = OutboundMessage.objects.filter(pk=message_id).values_list("destination", flat=True).first()
    if destination is None:
        return None
    result = destination_deliver(destination=destination, ids=[message_id], limit=1)
    if not result.claimed:
        return None
    return OutboundMessage.objects.get(pk=message_id)
