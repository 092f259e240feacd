"""Writes of the outbox: enqueue, claim, deliver in batches, record outcomes, sweep.

How a message travels:

1. `email_enqueue` / `webhook_enqueue` / `messages_enqueue_many` insert PENDING rows in
   the caller's transaction (idempotent on the key). After the commit, one "deliver this
   destination" task is queued per destination (the SMTP relay, a webhook host), not one
   per message, with one quick try at the broker (`OUTBOX_PUBLISH_TIMEOUT`); if the broker
   does not answer, the sweeper queues it later. A `Destination` row makes sure at most
   one such task waits in the broker per destination, whoever queued it.
2. `destination_deliver` asks the destination's circuit breaker, claims a batch of due
   rows (`FOR UPDATE SKIP LOCKED` on PostgreSQL), which starts a lease and counts an
   attempt on each, sends them over one SMTP session, and records the outcomes in one
   transaction: SENT (with the purpose's `on_sent` handler in the same transaction),
   PENDING again with a jittered backoff, FAILED, or REVIEW. A full batch queues the next
   task first, so several workers drain one destination side by side.
3. An outage of the destination (refused, timed out, 421, HTTP 5xx) gives the attempt
   back and feeds the breaker; after `OUTBOX_BREAKER_THRESHOLD` of them nothing connects
   until the cool-down ends, then one probe goes. Such messages give up by age
   (`OUTBOX_GIVE_UP_DAYS`), not by count. A connection lost after the whole message was
   sent is ambiguous: resent once, then left for staff to review.
4. `outbox_sweep` (beat, every minute) fails rows whose worker kept dying, and queues a
   task for each destination with due rows or expired leases, unless one is already
   waiting or its breaker is open; it queues at most `OUTBOX_SWEEP_BATCH` per run.

The only duplicate this allows is the one no sender can rule out: the server took the
message but the reply (or the worker) was lost before it was recorded; at most two copies,
with the same Message-ID.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core import bulk
from outbox import conf, delivery
from outbox.models import (
    AttemptOutcome,
    Channel,
    CircuitState,
    DeliveryAttempt,
    Destination,
    MessageBody,
    MessageState,
    OutboundMessage,
)

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
BatchHandler = Callable[[list[OutboundMessage]], None]


@dataclass(frozen=True)
class _Handlers:
    on_sent: Handler | None = None
    on_failed: Handler | None = None
    on_sent_batch: BatchHandler | None = None


_handlers: dict[str, _Handlers] = {}


def outbox_register_handler(
    purpose: str,
    *,
    on_sent: Handler | None = None,
    on_failed: Handler | None = None,
    on_sent_batch: BatchHandler | None = None,
) -> None:
    """React to the outcome of messages of `purpose`, atomically with recording it.

    The callbacks run inside the transaction that marks the message sent or failed, after
    the message row is updated, so a notice can be marked sent together with it. A batch
    delivery calls `on_sent_batch` once with every message of the purpose it sent (if
    given; else `on_sent` per message); should it raise, each message gets `on_sent` on
    its own. Call this from an AppConfig.ready(): workers import apps, not views.
    """
    _handlers[purpose] = _Handlers(on_sent=on_sent, on_failed=on_failed, on_sent_batch=on_sent_batch)


# --- Validation ---------------------------------------------------------------------------


def _refuse_control_chars(value: str, *, field: str) -> None:
    if _CONTROL_CHARS.search(value):
        raise ValidationError({field: "Line breaks and control characters are not allowed."})


# The everyday address (dot-atom local part of letters, digits and _+-; host names of
# letters, digits and inner hyphens; an alphabetic top-level domain): every address this
# matches, Django's validator accepts too (a test holds that), and matching it is a tenth
# of the validator's cost, which counts when ten thousand letters are queued at once.
# Anything else goes through the validator.
_PLAIN_ADDRESS = re.compile(
    r"(?=.{3,254}\Z)[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}\Z"
)


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
        if not _PLAIN_ADDRESS.match(address):
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


def _email_fields(
    *,
    to: list[str],
    subject: str,
    text: str,
    html: str = "",
    headers: dict[str, str] | None = None,
    purpose: str = "",
    ref: str = "",
) -> dict[str, Any]:
    recipients = clean_addresses(to)
    subject = (subject or "").strip()
    if not subject:
        raise ValidationError({"subject": "A subject is required."})
    _refuse_control_chars(subject, field="subject")
    if len(subject) > 998:
        raise ValidationError({"subject": "The subject is too long."})
    if not (text or "").strip():
        raise ValidationError({"text": "A plain-text body is required."})
    return {
        "channel": Channel.EMAIL,
        "destination": delivery.email_destination(),
        "to": recipients,
        "subject": subject,
        "body_text": text,
        "body_html": html or "",
        "headers": _clean_headers(headers),
        "purpose": purpose,
        "ref": ref,
    }


def _webhook_fields(
    *, url: str, payload: dict[str, Any], secret: str, purpose: str = "", ref: str = ""
) -> dict[str, Any]:
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
    return {
        "channel": Channel.WEBHOOK,
        "destination": delivery.webhook_destination(url),
        "url": url,
        "payload": payload,
        "secret": secret,
        "purpose": purpose,
        "ref": ref,
    }


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
    _kick_on_commit(message.destination)
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
    fields = _email_fields(
        to=to, subject=subject, text=text, html=html, headers=headers, purpose=purpose, ref=ref
    )
    return _insert(key, fields)


def webhook_enqueue(
    *, key: str, url: str, payload: dict[str, Any], secret: str, purpose: str = "", ref: str = ""
) -> OutboundMessage:
    """Queue one signed JSON POST. Idempotent on `key`."""
    key = _clean_key(key)
    return _insert(key, _webhook_fields(url=url, payload=payload, secret=secret, purpose=purpose, ref=ref))


@dataclass(frozen=True)
class EmailSpec:
    key: str
    to: list[str]
    subject: str
    text: str
    html: str = ""
    headers: dict[str, str] | None = None
    purpose: str = ""
    ref: str = ""


@dataclass(frozen=True)
class SharedBody:
    """An email rendered once for many recipients, with stand-ins (`fills` keys) in it."""

    subject: str
    text: str
    html: str = ""

    @property
    def digest(self) -> str:
        return hashlib.sha256("\0".join((self.subject, self.text, self.html)).encode()).hexdigest()


@dataclass(frozen=True)
class SharedEmailSpec:
    """One email whose subject and bodies are a `SharedBody`, stored once for all of them.

    `fills` maps each stand-in to this recipient's value: put in as given in the subject
    and text, HTML-escaped in the HTML (exactly what a template's autoescape would do).
    """

    key: str
    to: list[str]
    body: SharedBody
    fills: dict[str, str] = dataclasses.field(default_factory=dict)
    headers: dict[str, str] | None = None
    purpose: str = ""
    ref: str = ""


@dataclass(frozen=True)
class WebhookSpec:
    key: str
    url: str
    payload: dict[str, Any]
    secret: str
    purpose: str = ""
    ref: str = ""


AnySpec = EmailSpec | SharedEmailSpec | WebhookSpec

# The columns messages_enqueue_many writes, in this order.
_COLUMNS = (
    "channel",
    "idempotency_key",
    "purpose",
    "ref",
    "destination",
    "to",
    "subject",
    "body_text",
    "body_html",
    "body_id",
    "fills",
    "headers",
    "message_id",
    "url",
    "payload",
    "secret",
    "state",
    "attempts",
    "ambiguous_count",
    "max_attempts",
    "next_attempt_at",
    "last_error",
    "handlers_pending",
    "created_at",
    "updated_at",
)


def _clean_shared_body(body: SharedBody, fills: dict[str, str]) -> None:
    if not body.subject.strip():
        raise ValidationError({"subject": "A subject is required."})
    if not body.text.strip():
        raise ValidationError({"text": "A plain-text body is required."})
    for mark, value in fills.items():
        if not isinstance(mark, str) or not mark or not isinstance(value, str):
            raise ValidationError({"fills": "Stand-ins and their values must be text."})
        if mark in body.subject:
            subject = body.subject.replace(mark, value)
            _refuse_control_chars(subject, field="subject")
            if len(subject) > 998:
                raise ValidationError({"subject": "The subject is too long."})
    _refuse_control_chars(body.subject, field="subject")
    if len(body.subject) > 998:
        raise ValidationError({"subject": "The subject is too long."})


def _store_bodies(bodies: Iterable[SharedBody], now: datetime) -> dict[str, int]:
    """The id of each body's row by digest, inserting the ones not stored yet."""
    by_digest = {body.digest: body for body in bodies}
    if not by_digest:
        return {}
    bulk.bulk_insert(
        MessageBody,
        ("digest", "subject", "text", "html", "created_at"),
        [(d, b.subject, b.text, b.html, now) for d, b in by_digest.items()],
        ignore_conflicts=True,
    )
    return dict(MessageBody.objects.filter(digest__in=by_digest).values_list("digest", "pk"))


class Queued(NamedTuple):
    """The row a key names after `messages_enqueue_many`: new, or queued under it before."""

    pk: int
    message_id: str
    state: str


def messages_enqueue_many(specs: Iterable[AnySpec]) -> dict[str, Queued]:
    """Queue many messages, one INSERT statement per few thousand; returns the row each
    key names.

    Idempotent per key like `email_enqueue`: a key that exists already is skipped (the
    unique constraint decides, so two concurrent callers still queue each key once) and
    its existing row is returned.
    Every spec is validated first; one bad spec refuses the whole call. Shared bodies are
    stored once (by digest) however many messages use them.
    """
    now = timezone.now()
    budget = conf.max_attempts()
    specs = list(specs)
    email_destination = delivery.email_destination()
    bodies: dict[int, SharedBody] = {}
    for spec in specs:
        if isinstance(spec, SharedEmailSpec) and id(spec.body) not in bodies:
            bodies[id(spec.body)] = spec.body
    digests = {key: body.digest for key, body in bodies.items()}
    checked: set[tuple[int, tuple[str, ...]]] = set()
    rows: list[tuple[Any, ...]] = []
    keys: list[str] = []
    destinations: set[str] = set()
    for spec in specs:
        key = _clean_key(spec.key)
        body_digest: str | None = None
        fills: dict[str, str] = {}
        if isinstance(spec, SharedEmailSpec):
            fills = dict(spec.fills)
            # The body's checks depend only on it and on which stand-ins fill the subject.
            sig = (id(spec.body), tuple(v for m, v in fills.items() if m in spec.body.subject))
            if sig not in checked:
                _clean_shared_body(spec.body, fills)
                checked.add(sig)
            body_digest = digests[id(spec.body)]
            fields: dict[str, Any] = {
                "channel": Channel.EMAIL,
                "destination": email_destination,
                "to": clean_addresses(spec.to),
                "subject": "",
                "body_text": "",
                "body_html": "",
                "headers": _clean_headers(spec.headers),
                "purpose": spec.purpose,
                "ref": spec.ref,
            }
        elif isinstance(spec, EmailSpec):
            fields = _email_fields(
                to=spec.to,
                subject=spec.subject,
                text=spec.text,
                html=spec.html,
                headers=spec.headers,
                purpose=spec.purpose,
                ref=spec.ref,
            )
        else:
            fields = _webhook_fields(
                url=spec.url, payload=spec.payload, secret=spec.secret, purpose=spec.purpose, ref=spec.ref
            )
        destinations.add(fields["destination"])
        keys.append(key)
        rows.append(
            (
                fields["channel"],
                key,
                fields["purpose"],
                fields["ref"],
                fields["destination"],
                fields.get("to", []),
                fields.get("subject", ""),
                fields.get("body_text", ""),
                fields.get("body_html", ""),
                body_digest,  # the id once the bodies are stored
                fills,
                fields.get("headers", {}),
                message_id_for(key),
                fields.get("url", ""),
                fields.get("payload"),
                fields.get("secret", ""),
                MessageState.PENDING,
                0,
                0,
                budget,
                now,
                "",
                False,
                now,
                now,
            )
        )
    if not rows:
        return {}
    body_ids = _store_bodies(bodies.values(), now)
    body_at = _COLUMNS.index("body_id")
    rows = [
        row if row[body_at] is None else (*row[:body_at], body_ids[row[body_at]], *row[body_at + 1 :])
        for row in rows
    ]
    inserted = bulk.bulk_insert_returning(
        OutboundMessage,
        _COLUMNS,
        rows,
        ("idempotency_key", "pk", "message_id", "state"),
        ignore_conflicts=True,
    )
    found = {key: Queued(pk, message_id, state) for key, pk, message_id, state in inserted or ()}
    missing = [key for key in keys if key not in found]
    if missing:
        # Queued under these keys before (or inserted where the backend cannot say which).
        found.update(
            (key, Queued(pk, message_id, state))
            for key, pk, message_id, state in OutboundMessage.objects.filter(
                bulk.AnyOf(F("idempotency_key"), missing)
            ).values_list("idempotency_key", "pk", "message_id", "state")
        )
    for destination in destinations:
        _kick_on_commit(destination)
    return found


# --- Kicks: "deliver this destination" tasks, at most one waiting per destination ---------------

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


def _kick_on_commit(destination: str) -> None:
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


def _eager() -> bool:
    from statuspage.celery import app

    # In-process mode has no worker: a kick delivers right here, and retries wait for
    # the sweeper (beat or the outbox_sweep command).
    return bool(app.conf.task_always_eager)


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
    from statuspage.celery import app

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
        with app.connection_for_write(connect_timeout=timeout, transport_options=options) as conn:
            producer = app.amqp.Producer(conn, auto_declare=False)
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
    if _eager():
        task.apply_async(args)
        return True
    return _publish([(task, args)]) == 1


def _task_for(destination: str) -> Any:
    from outbox import tasks

    return tasks.deliver_emails if destination == delivery.SMTP_DESTINATION else tasks.deliver_webhooks


def outbox_kick(destinations: Iterable[str]) -> int:
    """Ask a worker to deliver what is due at each destination; returns tasks queued."""
    destinations = list(dict.fromkeys(destinations))
    if not destinations:
        return 0
    if _eager():
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


# --- Circuit breaker ------------------------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    allowed: bool
    probe: bool = False
    clean: bool = False  # closed with no failures: a success has nothing to reset


def breaker_gate(*, destination: str) -> Gate:
    """May we connect to `destination` now? Shared by every process through the database."""
    now = timezone.now()
    row = (
        Destination.objects.filter(key=destination)
        .values("state", "failures", "open_until", "probe_until")
        .first()
    )
    if row is None or row["state"] == CircuitState.CLOSED:
        return Gate(allowed=True, clean=row is None or row["failures"] == 0)
    if row["state"] == CircuitState.OPEN and row["open_until"] and row["open_until"] > now:
        return Gate(allowed=False)
    if row["state"] == CircuitState.HALF_OPEN and row["probe_until"] and row["probe_until"] > now:
        return Gate(allowed=False)
    # The cool-down is over (or the last probe's lease ran out): one process, the one
    # whose conditional UPDATE wins, sends one message as the probe.
    won = (
        Destination.objects.filter(key=destination)
        .filter(
            Q(state=CircuitState.OPEN, open_until__lte=now)
            | Q(state=CircuitState.HALF_OPEN, probe_until__lte=now)
        )
        .update(state=CircuitState.HALF_OPEN, probe_until=now + timedelta(seconds=conf.lease_seconds()))
    )
    return Gate(allowed=won == 1, probe=won == 1)


def breaker_failure(*, destination: str, error: str, probe: bool) -> None:
    now = timezone.now()
    with transaction.atomic():
        row, _ = Destination.objects.select_for_update().get_or_create(key=destination)
        row.failures += 1
        row.last_error = error[:2000]
        if probe or row.state == CircuitState.HALF_OPEN or row.failures >= conf.breaker_threshold():
            row.opened_count += 1
            # Grows while the outage lasts; jittered so that processes do not probe in step.
            ceiling = min(conf.breaker_max_cooldown(), conf.breaker_cooldown() * 2 ** (row.opened_count - 1))
            row.state = CircuitState.OPEN
            row.open_until = now + timedelta(seconds=random.uniform(0.8, 1.0) * ceiling)
            row.probe_until = None
            logger.warning(
                "outbox: %s unavailable, breaker open until %s: %s", destination, row.open_until, error
            )
        row.save()


def breaker_success(*, destination: str, gate: Gate) -> None:
    if gate.clean:
        return
    Destination.objects.filter(key=destination).exclude(state=CircuitState.CLOSED, failures=0).update(
        state=CircuitState.CLOSED, failures=0, opened_count=0, open_until=None, probe_until=None
    )


def breaker_release_probe(*, destination: str) -> None:
    # The probe found nothing to send: let the next kick probe at once.
    Destination.objects.filter(key=destination, state=CircuitState.HALF_OPEN).update(
        state=CircuitState.OPEN, open_until=timezone.now(), probe_until=None
    )


# --- Claim ----------------------------------------------------------------------------------


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
    claim_fields = {
        "state": MessageState.SENDING,
        "lease_expires_at": lease_until,
        "attempts": F("attempts") + 1,
        "updated_at": now,
    }
    with transaction.atomic():
        due = OutboundMessage.objects.filter(_claimable(now), attempts__lt=F("max_attempts"))
        if destination is not None:
            due = due.filter(destination=destination)
        if ids is not None:
            due = due.filter(pk__in=ids)
        due = due.order_by("next_attempt_at", "pk")
        if connection.vendor == "postgresql":
            claimed = _claim_statement(
                destination=destination, ids=ids, limit=limit, now=now, lease_until=lease_until
            )
            picked = [row.pk for row in claimed]
            by_pk = {row.pk: row for row in claimed}
        elif connection.features.has_select_for_update_skip_locked:
            picked = list(due.select_for_update(skip_locked=True).values_list("pk", flat=True)[:limit])
            if picked:
                OutboundMessage.objects.filter(pk__in=picked).update(**claim_fields)
        else:
            picked = [
                pk
                for pk in due.values_list("pk", flat=True)[:limit]
                if OutboundMessage.objects.filter(
                    _claimable(now), pk=pk, attempts__lt=F("max_attempts")
                ).update(**claim_fields)
                == 1
            ]
        if not picked:
            return []
        if connection.vendor != "postgresql":
            by_pk = OutboundMessage.objects.in_bulk(picked)
        rows = [by_pk[pk] for pk in picked]
        # Shared bodies once each, not once per row (a batch is usually one letter).
        bodies = MessageBody.objects.in_bulk({row.body_id for row in rows if row.body_id is not None})
        for row in rows:
            if row.body_id is not None:
                row.body = bodies[row.body_id]
        # An attempt left 'started' by a killed worker is now known to be lost.
        DeliveryAttempt.objects.filter(message_id__in=picked, outcome=AttemptOutcome.STARTED).update(
            outcome=AttemptOutcome.LOST, finished_at=now, error="worker lost before recording an outcome"
        )
        attempts = DeliveryAttempt.objects.bulk_create(
            [DeliveryAttempt(message=row, number=row.attempts, started_at=now) for row in rows]
        )
    return list(zip(rows, attempts, strict=True))


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


# --- Record outcomes ------------------------------------------------------------------------


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


def _run_sent_handlers(rows: list[OutboundMessage]) -> None:
    by_purpose: dict[str, list[OutboundMessage]] = {}
    for row in rows:
        by_purpose.setdefault(row.purpose, []).append(row)
    for purpose, group in by_purpose.items():
        handlers = _handlers.get(purpose)
        if handlers is None:
            continue
        if handlers.on_sent_batch is not None and len(group) > 1:
            try:
                with transaction.atomic():
                    handlers.on_sent_batch(group)
                continue
            except Exception:
                logger.exception("outbox: batch on_sent handler for %s failed; one by one", purpose)
        for row in group:
            _run_handler(row, "on_sent")


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
        _run_handler(row, "on_failed")


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
        ids = sorted(message.pk for message, _ in claims)
        rows = OutboundMessage.objects.select_for_update().in_bulk(ids)
        sent: list[OutboundMessage] = []
        sent_attempts: dict[int | None, list[int]] = {}
        untried_ids: list[int] = []
        untried_attempts: list[int] = []
        for (message, attempt), result in zip(claims, results, strict=True):
            row = rows[message.pk]
            mine = row.state == MessageState.SENDING and row.attempts == attempt.number
            if result is None:
                untried_attempts.append(attempt.pk)
                if mine:
                    untried_ids.append(row.pk)
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
                sent.append(row)
                sent_attempts.setdefault(result.status_code, []).append(attempt.pk)
                continue
            if row.state in (
                MessageState.SENT,
                MessageState.CANCELLED,
                MessageState.FAILED,
                MessageState.REVIEW,
            ):
                # Someone else finished it meanwhile (only possible after our lease ran out).
                attempt.outcome = (
                    result.outcome if result.outcome in AttemptOutcome.values else AttemptOutcome.TRANSIENT
                )
                attempt.save(update_fields=["finished_at", "status_code", "error", "outcome"])
                continue
            if result.outcome == delivery.SENT:
                row.state = MessageState.SENT
                row.sent_at = row.sent_at or now
                row.lease_expires_at = None
                row.last_error = ""
                sent.append(row)
                sent_attempts.setdefault(result.status_code, []).append(attempt.pk)
                continue
            _record_unsent(row, attempt, result, now)
        if sent:
            sent_ids = [row.pk for row in sent]
            OutboundMessage.objects.filter(pk__in=sent_ids, sent_at__isnull=True).update(sent_at=now)
            OutboundMessage.objects.filter(pk__in=sent_ids).update(
                state=MessageState.SENT,
                lease_expires_at=None,
                last_error="",
                handlers_pending=False,
                updated_at=now,
            )
            for status_code, attempt_ids in sent_attempts.items():
                DeliveryAttempt.objects.filter(pk__in=attempt_ids).update(
                    outcome=AttemptOutcome.SENT, finished_at=now, status_code=status_code, error=""
                )
            _run_sent_handlers(sent)
        if untried_ids:
            OutboundMessage.objects.filter(pk__in=untried_ids).update(
                state=MessageState.PENDING,
                attempts=F("attempts") - 1,
                lease_expires_at=None,
                next_attempt_at=now,
                updated_at=now,
            )
        if untried_attempts:
            DeliveryAttempt.objects.filter(pk__in=untried_attempts).delete()
    return [rows[message.pk] for message, _ in claims]


def message_record_outcome(
    *, message: OutboundMessage, attempt: DeliveryAttempt, outcome: str, status_code: int | None, error: str
) -> OutboundMessage:
    """Record one attempt's result; returns the row as stored."""
    result = delivery.Result(outcome, status_code, error)
    return messages_record_outcomes([(message, attempt)], [result])[0]


# --- Deliver --------------------------------------------------------------------------------


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
    if full and not _eager():
        # More is due: queue the next batch now, so another worker sends it meanwhile.
        outbox_kick([destination])
    try:
        results = _send_batch(claims)
    except Exception as exc:
        logger.exception("outbox: unexpected error delivering to %s", destination)
        results = [delivery.Result(delivery.TRANSIENT, None, f"{type(exc).__name__}: {exc}")]
        results += [None] * (len(claims) - 1)
    messages_record_outcomes(claims, results)
    outage = next((r for r in results if r is not None and r.outcome == delivery.OUTAGE), None)
    answered = any(
        r is not None and r.outcome in (delivery.SENT, delivery.TRANSIENT, delivery.PERMANENT)
        for r in results
    )
    if outage is not None:
        breaker_failure(destination=destination, error=outage.error, probe=gate.probe)
    elif answered:
        breaker_success(destination=destination, gate=gate)
    if outage is None and (gate.probe or None in results) and not _eager():
        # The probe went through, or the session died before the end of the batch: go on.
        outbox_kick([destination])
    return BatchResult(
        claimed=len(claims),
        sent=sum(1 for r in results if r is not None and r.outcome == delivery.SENT),
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


# --- Sweep, retry, cancel -------------------------------------------------------------------


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

    # Sent, but the worker died before it recorded the batch: the handlers still run,
    # once (the flag is cleared in the same transaction).
    orphaned = OutboundMessage.objects.filter(
        state=MessageState.SENT,
        handlers_pending=True,
        updated_at__lt=now - timedelta(seconds=conf.lease_seconds()),
    ).values_list("pk", flat=True)[:limit]
    for pk in list(orphaned):
        with transaction.atomic():
            row = OutboundMessage.objects.select_for_update().get(pk=pk)
            if not row.handlers_pending:
                continue
            row.handlers_pending = False
            row.save(update_fields=["handlers_pending", "updated_at"])
            DeliveryAttempt.objects.filter(message=row, outcome=AttemptOutcome.STARTED).update(
                outcome=AttemptOutcome.SENT, finished_at=now, error="recorded by the sweeper (worker lost)"
            )
            _run_handler(row, "on_sent")

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
    return SweepResult(requeued=requeued, reclaimed=reclaimed, failed=failed, kicked=kicked)


@transaction.atomic
def message_retry(*, message: OutboundMessage, extra_attempts: int | None = None) -> OutboundMessage:
    """Staff action: give a failed, cancelled or reviewed message a fresh budget, deliver now."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state not in (MessageState.FAILED, MessageState.CANCELLED, MessageState.REVIEW):
        raise ValidationError("Only failed, cancelled or reviewed messages can be retried.")
    row.state = MessageState.PENDING
    row.max_attempts = row.attempts + (extra_attempts or conf.max_attempts())
    row.ambiguous_count = 0
    row.next_attempt_at = timezone.now()
    row.save(update_fields=["state", "max_attempts", "ambiguous_count", "next_attempt_at", "updated_at"])
    _kick_on_commit(row.destination)
    return row


@transaction.atomic
def message_confirm_delivered(*, message: OutboundMessage) -> OutboundMessage:
    """Staff action on a message under review: the receiver has it, record it as sent."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state != MessageState.REVIEW:
        raise ValidationError("Only messages under review can be confirmed as delivered.")
    row.state = MessageState.SENT
    row.sent_at = timezone.now()
    row.save(update_fields=["state", "sent_at", "updated_at"])
    _run_handler(row, "on_sent")
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
