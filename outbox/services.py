"""Writes of the outbox: enqueue, claim, record outcomes, sweep, retry, cancel.

How a message travels:

1. `email_enqueue` / `webhook_enqueue` insert a PENDING row in the caller's transaction
   (idempotent on the key) and ask Celery to deliver it once that transaction commits.
2. `deliver_message` claims the row with a conditional UPDATE (only one worker can win),
   which also starts a lease and counts the attempt. It sends, then records the outcome:
   SENT (and runs the purpose's `on_sent` handler in the same transaction), back to
   PENDING with a jittered backoff for transient errors, or FAILED for permanent errors
   or an exhausted budget (running `on_failed`).
3. `outbox_sweep` (beat, every minute) re-enqueues due PENDING rows nobody picked up
   (Redis flushed, web process died before enqueueing) and rows whose lease ran out
   (worker killed mid-send), and fails rows that used up their budget that way.

The only duplicate this allows is the one no sender can rule out: the SMTP server took the
message but the worker died before recording it. The copy has the same Message-ID.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from outbox import conf
from outbox.models import AttemptOutcome, Channel, DeliveryAttempt, MessageState, OutboundMessage

logger = logging.getLogger(__name__)

# Control characters (CR and LF above all) must never reach a header: they would let a
# value start a header of its own.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,75}$")
# Headers the outbox itself sets; a caller overriding them could redirect or forge mail.
_RESERVED_HEADERS = {
    "to",
    "cc",
    "bcc",
    "from",
    "sender",
    "subject",
    "message-id",
    "date",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
}
MAX_RECIPIENTS = 50

Handler = Callable[[OutboundMessage], None]


@dataclass(frozen=True)
class _Handlers:
    on_sent: Handler | None = None
    on_failed: Handler | None = None


_handlers: dict[str, _Handlers] = {}


def outbox_register_handler(
    purpose: str, *, on_sent: Handler | None = None, on_failed: Handler | None = None
) -> None:
    """React to the outcome of messages of `purpose`, atomically with recording it.

    The callbacks run inside the transaction that marks the message sent or failed, after
    the message row is updated, so a notice can be marked sent together with it. Call this
    from an AppConfig.ready(): workers import apps, not views.
    """
    _handlers[purpose] = _Handlers(on_sent=on_sent, on_failed=on_failed)


# --- Validation ---------------------------------------------------------------------------


def _refuse_control_chars(value: str, *, field: str) -> None:
    if _CONTROL_CHARS.search(value):
        raise ValidationError({field: "Line breaks and control characters are not allowed."})


def clean_addresses(to: Iterable[str], *, field: str = "to") -> list[str]:
    """Plain addresses only (no display names), each a valid address on one line."""
    if isinstance(to, str):
        raise ValidationError({field: "Give a list of addresses."})
    cleaned: list[str] = []
    for raw in to:
        address = (raw or "").strip() if isinstance(raw, str) else ""
        _refuse_control_chars(raw if isinstance(raw, str) else "", field=field)
        if not address:
            raise ValidationError({field: "An address is empty."})
        if any(ch in address for ch in ",;<>\"'() "):
            raise ValidationError({field: f"{address!r} is not a single plain email address."})
        try:
            validate_email(address)
        except ValidationError:
            raise ValidationError({field: f"{address!r} is not a valid email address."}) from None
        if address.lower() not in (a.lower() for a in cleaned):
            cleaned.append(address)
    if not cleaned:
        raise ValidationError({field: "At least one recipient is required."})
    if len(cleaned) > MAX_RECIPIENTS:
        raise ValidationError({field: f"At most {MAX_RECIPIENTS} recipients."})
    return cleaned


def _clean_headers(headers: dict[str, str] | None) -> dict[str, str]:
    cleaned: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise ValidationError({"headers": f"{name!r} is not a valid header name."})
        if name.lower() in _RESERVED_HEADERS:
            raise ValidationError({"headers": f"The {name} header is set by the outbox."})
        if not isinstance(value, str):
            raise ValidationError({"headers": f"The {name} header needs a text value."})
        _refuse_control_chars(value, field="headers")
        cleaned[name] = value
    return cleaned


def _clean_key(key: str) -> str:
    key = (key or "").strip()
    if not key or len(key) > 255:
        raise ValidationError({"key": "An idempotency key of 1 to 255 characters is required."})
    return key


def message_id_for(key: str) -> str:
    """A stable Message-ID: a duplicate that slips through is recognisable as one."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"<{digest}@{conf.message_id_domain()}>"


# --- Enqueue ------------------------------------------------------------------------------


def _insert(key: str, fields: dict[str, Any]) -> OutboundMessage:
    existing = OutboundMessage.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    try:
        # A savepoint, so that losing the race on the unique key does not poison the
        # caller's transaction; the winner's row is returned instead.
        with transaction.atomic():
            message = OutboundMessage.objects.create(
                idempotency_key=key,
                message_id=message_id_for(key),
                max_attempts=conf.max_attempts(),
                next_attempt_at=timezone.now(),
                **fields,
            )
    except IntegrityError:
        return OutboundMessage.objects.get(idempotency_key=key)
    _enqueue_on_commit(message.pk)
    return message


def email_enqueue(
    *,
    key: str,
    to: list[str],
    subject: str,
    text: str,
    html: str = "",
    headers: dict[str, str] | None = None,
    purpose: str = "",
    ref: str = "",
) -> OutboundMessage:
    """Queue one email. Idempotent on `key`: a second call returns the first row."""
    key = _clean_key(key)
    recipients = clean_addresses(to)
    subject = (subject or "").strip()
    if not subject:
        raise ValidationError({"subject": "A subject is required."})
    _refuse_control_chars(subject, field="subject")
    if len(subject) > 998:
        raise ValidationError({"subject": "The subject is too long."})
    if not (text or "").strip():
        raise ValidationError({"text": "A plain-text body is required."})
    return _insert(
        key,
        {
            "channel": Channel.EMAIL,
            "to": recipients,
            "subject": subject,
            "body_text": text,
            "body_html": html or "",
            "headers": _clean_headers(headers),
            "purpose": purpose,
            "ref": ref,
        },
    )


def webhook_enqueue(
    *, key: str, url: str, payload: dict[str, Any], secret: str, purpose: str = "", ref: str = ""
) -> OutboundMessage:
    """Queue one signed JSON POST. Idempotent on `key`."""
    key = _clean_key(key)
    url = (url or "").strip()
    _refuse_control_chars(url, field="url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError({"url": "Only http and https URLs can receive webhooks."})
    if parts.username or parts.password:
        raise ValidationError({"url": "Credentials in the URL are not allowed."})
    if not isinstance(payload, dict):
        raise ValidationError({"payload": "The payload must be a JSON object."})
    if not secret:
        raise ValidationError({"secret": "A signing secret is required."})
    return _insert(
        key,
        {
            "channel": Channel.WEBHOOK,
            "url": url,
            "payload": payload,
            "secret": secret,
            "purpose": purpose,
            "ref": ref,
        },
    )


# After a failed publish, skip publishing for a while: with the broker down, each try
# costs a connect timeout, and a request that queued 50 emails must not wait 50 of them.
# The rows are durable; the sweeper enqueues them once the broker is back.
BROKER_BACKOFF_SECONDS = 10.0
_broker_down_until = 0.0


def _publish(message_id: int, countdown: float | None = None) -> None:
    global _broker_down_until
    from outbox.tasks import deliver_message

    if time.monotonic() < _broker_down_until:
        logger.info("outbox: broker recently unreachable; message %s left for the sweeper", message_id)
        return
    try:
        # No publish retries: with Redis down the request must not hang. The row is
        # durable and the sweeper enqueues it again once Redis is back.
        if countdown is None:
            deliver_message.apply_async((message_id,), retry=False)
        else:
            deliver_message.apply_async((message_id,), countdown=countdown, retry=False)
    except Exception:
        _broker_down_until = time.monotonic() + BROKER_BACKOFF_SECONDS
        logger.warning(
            "outbox: could not enqueue message %s; the sweeper will retry", message_id, exc_info=True
        )


def _enqueue_on_commit(message_id: int, countdown: float | None = None) -> None:
    transaction.on_commit(lambda: _publish(message_id, countdown), robust=True)


# --- Delivery -----------------------------------------------------------------------------


def backoff_delay(attempt: int, *, rng: random.Random | None = None) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(n-1))].

    Full jitter spreads a crowd of messages that failed together (an SMTP outage) over
    the whole window, so they do not come back as one burst.
    """
    ceiling = min(conf.retry_max_delay(), conf.retry_base_delay() * (2 ** max(attempt - 1, 0)))
    return (rng or random).uniform(0, ceiling)


def _claimable(now: datetime) -> Q:
    return Q(state=MessageState.PENDING, next_attempt_at__lte=now) | Q(
        state=MessageState.SENDING, lease_expires_at__lt=now
    )


def message_claim(*, message_id: int) -> tuple[OutboundMessage, DeliveryAttempt] | None:
    """Take the row for one attempt, or None when it is not ours to send now.

    The conditional UPDATE is the claim: of two workers holding the same id (a duplicate
    Celery message, a sweep racing a retry), exactly one sees a row count of 1.
    """
    now = timezone.now()
    lease_until = now + timedelta(seconds=conf.lease_seconds())
    with transaction.atomic():
        claimed = (
            OutboundMessage.objects.filter(_claimable(now), pk=message_id, attempts__lt=F("max_attempts"))
            .exclude(state__in=[MessageState.SENT, MessageState.FAILED, MessageState.CANCELLED])
            .update(
                state=MessageState.SENDING,
                lease_expires_at=lease_until,
                attempts=F("attempts") + 1,
                updated_at=now,
            )
        )
        if claimed != 1:
            return None
        message = OutboundMessage.objects.get(pk=message_id)
        if message.attempts > 1:
            # An attempt left 'started' by a killed worker is now known to be lost.
            DeliveryAttempt.objects.filter(message=message, outcome=AttemptOutcome.STARTED).update(
                outcome=AttemptOutcome.LOST, finished_at=now, error="worker lost before recording an outcome"
            )
        attempt = DeliveryAttempt.objects.create(message=message, number=message.attempts, started_at=now)
    return message, attempt


def _run_handler(message: OutboundMessage, which: str) -> None:
    handlers = _handlers.get(message.purpose)
    handler = getattr(handlers, which, None) if handlers else None
    if handler is None:
        return
    try:
        # A savepoint: a broken handler must not undo "sent" (that would send it again).
        with transaction.atomic():
            handler(message)
    except Exception as exc:
        logger.exception("outbox: %s handler for %s failed on message %s", which, message.purpose, message.pk)
        OutboundMessage.objects.filter(pk=message.pk).update(
            last_error=f"{which} handler failed: {type(exc).__name__}: {exc}"[:2000]
        )


def message_record_outcome(
    *, message: OutboundMessage, attempt: DeliveryAttempt, outcome: str, status_code: int | None, error: str
) -> OutboundMessage:
    """Record one attempt's result; returns the row as stored."""
    now = timezone.now()
    with transaction.atomic():
        row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
        attempt.finished_at = now
        attempt.status_code = status_code
        attempt.error = error[:2000]
        if row.state in (MessageState.SENT, MessageState.CANCELLED):
            # Someone else finished it meanwhile (only possible after our lease ran out).
            attempt.outcome = AttemptOutcome.SENT if outcome == "sent" else outcome
            attempt.save(update_fields=["finished_at", "status_code", "error", "outcome"])
            return row
        if outcome == "sent":
            row.state = MessageState.SENT
            row.sent_at = now
            row.lease_expires_at = None
            row.last_error = ""
            row.save(update_fields=["state", "sent_at", "lease_expires_at", "last_error", "updated_at"])
            attempt.outcome = AttemptOutcome.SENT
            attempt.save(update_fields=["finished_at", "status_code", "error", "outcome"])
            _run_handler(row, "on_sent")
            return row
        budget_left = row.attempts < row.max_attempts
        if outcome == "transient" and budget_left:
            delay = backoff_delay(row.attempts)
            row.state = MessageState.PENDING
            row.next_attempt_at = now + timedelta(seconds=delay)
            row.lease_expires_at = None
            row.last_error = error[:2000]
            row.save(
                update_fields=["state", "next_attempt_at", "lease_expires_at", "last_error", "updated_at"]
            )
            attempt.outcome = AttemptOutcome.TRANSIENT
            attempt.retry_delay = delay
            attempt.save(update_fields=["finished_at", "status_code", "error", "outcome", "retry_delay"])
            if not _eager():
                _enqueue_on_commit(row.pk, countdown=delay)
            return row
        row.state = MessageState.FAILED
        row.lease_expires_at = None
        suffix = "" if outcome == "permanent" else f" (gave up after {row.attempts} attempts)"
        row.last_error = (error + suffix)[:2000]
        row.save(update_fields=["state", "lease_expires_at", "last_error", "updated_at"])
        attempt.outcome = AttemptOutcome.PERMANENT if outcome == "permanent" else AttemptOutcome.TRANSIENT
        attempt.save(update_fields=["finished_at", "status_code", "error", "outcome"])
        _run_handler(row, "on_failed")
        return row


def _eager() -> bool:
    from statuspage.celery import app

    # In-process mode has no worker to hold a countdown; the sweeper (beat or the
    # outbox_sweep command) picks the row up once it is due instead.
    return bool(app.conf.task_always_eager)


def message_deliver(*, message_id: int) -> OutboundMessage | None:
    """One delivery attempt: claim, send, record. None when the row was not claimable."""
    from outbox import delivery

    claim = message_claim(message_id=message_id)
    if claim is None:
        return None
    message, attempt = claim
    send = delivery.send_email if message.channel == Channel.EMAIL else delivery.send_webhook
    try:
        result = send(message)
    except Exception as exc:
        logger.exception("outbox: unexpected error delivering message %s", message.pk)
        result = delivery.Result(delivery.TRANSIENT, None, f"{type(exc).__name__}: {exc}")
    return message_record_outcome(
        message=message,
        attempt=attempt,
        outcome=result.outcome,
        status_code=result.status_code,
        error=result.error,
    )


# --- Sweep, retry, cancel -------------------------------------------------------------------


@dataclass(frozen=True)
class SweepResult:
    requeued: int
    reclaimed: int
    failed: int


def outbox_sweep(*, now: datetime | None = None, limit: int | None = None) -> SweepResult:
    """Re-enqueue what nobody is delivering; fail what used up its budget by crashing."""
    now = now or timezone.now()
    limit = limit or conf.sweep_batch()
    grace = timedelta(seconds=conf.sweep_grace_seconds())
    failed = 0
    # Leases that ran out with no attempts left: the message kills its worker (or the
    # worker keeps dying); stop and show it to staff instead of looping forever.
    exhausted = OutboundMessage.objects.filter(
        state=MessageState.SENDING, lease_expires_at__lt=now, attempts__gte=F("max_attempts")
    ).values_list("pk", flat=True)[:limit]
    for pk in list(exhausted):
        with transaction.atomic():
            row = OutboundMessage.objects.select_for_update().get(pk=pk)
            if (
                row.state != MessageState.SENDING
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
            _run_handler(row, "on_failed")
            failed += 1

    reclaim_ids = list(
        OutboundMessage.objects.filter(
            state=MessageState.SENDING, lease_expires_at__lt=now, attempts__lt=F("max_attempts")
        )
        .order_by("lease_expires_at")
        .values_list("pk", flat=True)[:limit]
    )
    due_ids = list(
        OutboundMessage.objects.filter(state=MessageState.PENDING, next_attempt_at__lte=now - grace)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    if due_ids:
        # Moving next_attempt_at to now means a row still stuck in a slow queue is
        # enqueued again at most once per grace period, not on every sweep.
        OutboundMessage.objects.filter(pk__in=due_ids, state=MessageState.PENDING).update(
            next_attempt_at=now, updated_at=now
        )
    for pk in reclaim_ids + due_ids:
        _publish(pk)
    return SweepResult(requeued=len(due_ids), reclaimed=len(reclaim_ids), failed=failed)


@transaction.atomic
def message_retry(*, message: OutboundMessage, extra_attempts: int | None = None) -> OutboundMessage:
    """Staff action: give a failed (or cancelled) message a fresh budget and deliver it now."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state not in (MessageState.FAILED, MessageState.CANCELLED):
        raise ValidationError("Only failed or cancelled messages can be retried.")
    row.state = MessageState.PENDING
    row.max_attempts = row.attempts + (extra_attempts or conf.max_attempts())
    row.next_attempt_at = timezone.now()
    row.save(update_fields=["state", "max_attempts", "next_attempt_at", "updated_at"])
    _enqueue_on_commit(row.pk)
    return row


@transaction.atomic
def message_cancel(*, message: OutboundMessage) -> OutboundMessage:
    """Stop a message that has not gone out. One being sent right now cannot be stopped."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state != MessageState.PENDING:
        raise ValidationError(f"A {row.state} message cannot be cancelled.")
    row.state = MessageState.CANCELLED
    row.save(update_fields=["state", "updated_at"])
    return row
