"""Enqueue: insert PENDING rows in the caller's transaction, idempotent on the key, and kick
each destination once after the commit.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core import bulk
from outbox import conf, delivery
from outbox.models import Channel, MessageBody, MessageState, OutboundMessage
from outbox.services.kicks import kick_on_commit
from outbox.services.validation import (
    clean_addresses,
    clean_headers,
    clean_key,
    clean_shared_body,
    email_fields,
    message_id_for,
    webhook_fields,
)


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
    kick_on_commit(message.destination)
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
    key = clean_key(key)
    fields = email_fields(
        to=to, subject=subject, text=text, html=html, headers=headers, purpose=purpose, ref=ref
    )
    return _insert(key, fields)


def webhook_enqueue(
    *,
    key: str,
    url: str,
    payload: dict[str, Any],
    secret: str,
    purpose: str = "",
    ref: str = "",
    event: str = "",
) -> OutboundMessage:
    """Queue one signed JSON POST. Idempotent on `key`. `event` is sent as
    `X-Status-Event` (else the payload's meta.event names it)."""
    key = clean_key(key)
    return _insert(
        key, webhook_fields(url=url, payload=payload, secret=secret, purpose=purpose, ref=ref, event=event)
    )


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
    event: str = ""


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
    specs = list(specs)
    bodies = {id(spec.body): spec.body for spec in specs if isinstance(spec, SharedEmailSpec)}
    rows, keys, destinations = _plan_rows(specs, bodies, now)
    if not rows:
        return {}
    body_ids = _store_bodies(bodies.values(), now)
    body_at = _COLUMNS.index("body_id")
    rows = [
        row if row[body_at] is None else (*row[:body_at], body_ids[row[body_at]], *row[body_at + 1 :])
        for row in rows
    ]
    found = _insert_rows(rows, keys)
    for destination in destinations:
        kick_on_commit(destination)
    return found


def _plan_rows(
    specs: list[AnySpec], bodies: dict[int, SharedBody], now: datetime
) -> tuple[list[tuple[Any, ...]], list[str], set[str]]:
    """Check every spec and build its row, the shared bodies named by digest (no database).

    Returns (rows, their keys, the destinations they go to).
    """
    budget = conf.max_attempts()
    email_destination = delivery.email_destination()
    digests = {key: body.digest for key, body in bodies.items()}
    checked: set[tuple[int, tuple[str, ...]]] = set()
    rows: list[tuple[Any, ...]] = []
    keys: list[str] = []
    destinations: set[str] = set()
    for spec in specs:
        key = clean_key(spec.key)
        fields, fills = _spec_fields(spec, email_destination, checked)
        digest = digests[id(spec.body)] if isinstance(spec, SharedEmailSpec) else None
        destinations.add(fields["destination"])
        keys.append(key)
        rows.append(_row(key, fields, digest, fills, budget, now))
    return rows, keys, destinations


def _spec_fields(
    spec: AnySpec, email_destination: str, checked: set[tuple[int, tuple[str, ...]]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the checked columns of one spec's row, its fills)."""
    if isinstance(spec, SharedEmailSpec):
        return _shared_fields(spec, email_destination, checked), dict(spec.fills)
    if isinstance(spec, EmailSpec):
        fields = email_fields(
            to=spec.to,
            subject=spec.subject,
            text=spec.text,
            html=spec.html,
            headers=spec.headers,
            purpose=spec.purpose,
            ref=spec.ref,
        )
    else:
        fields = webhook_fields(
            url=spec.url,
            payload=spec.payload,
            secret=spec.secret,
            purpose=spec.purpose,
            ref=spec.ref,
            event=spec.event,
        )
    return fields, {}


def _shared_fields(
    spec: SharedEmailSpec, email_destination: str, checked: set[tuple[int, tuple[str, ...]]]
) -> dict[str, Any]:
    # The body's checks depend only on it and on which stand-ins fill the subject.
    sig = (id(spec.body), tuple(v for m, v in spec.fills.items() if m in spec.body.subject))
    if sig not in checked:
        clean_shared_body(spec.body, dict(spec.fills))
        checked.add(sig)
    return {
        "channel": Channel.EMAIL,
        "destination": email_destination,
        "to": clean_addresses(spec.to),
        "subject": "",
        "body_text": "",
        "body_html": "",
        "headers": clean_headers(spec.headers),
        "purpose": spec.purpose,
        "ref": spec.ref,
    }


def _row(
    key: str, fields: dict[str, Any], digest: str | None, fills: dict[str, str], budget: int, now: datetime
) -> tuple[Any, ...]:
    """One row in `_COLUMNS` order; `digest` stands for the body's id until it is stored."""
    return (
        fields["channel"],
        key,
        fields["purpose"],
        fields["ref"],
        fields["destination"],
        fields.get("to", []),
        fields.get("subject", ""),
        fields.get("body_text", ""),
        fields.get("body_html", ""),
        digest,
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


def _insert_rows(rows: list[tuple[Any, ...]], keys: list[str]) -> dict[str, Queued]:
    """INSERT the rows, skipping keys queued before; returns the row each key names."""
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
    return found
