"""Checks on what callers queue: addresses, headers, keys, subjects, webhook targets."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from outbox import conf, delivery
from outbox.models import Channel

if TYPE_CHECKING:
    from outbox.services.enqueue import SharedBody

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
# RFC 5322's line limit, which a subject header must keep to.
_MAX_SUBJECT = 998


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


def _clean_address(raw: object, *, field: str) -> str:
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
    return address


def clean_addresses(to: Iterable[str], *, field: str = "to") -> list[str]:
    """Plain addresses only (no display names), each a valid address on one line."""
    if isinstance(to, str):
        raise ValidationError({field: "Give a list of addresses."})
    cleaned: list[str] = []
    for raw in to:
        address = _clean_address(raw, field=field)
        if address.lower() not in (a.lower() for a in cleaned):
            cleaned.append(address)
    if not cleaned:
        raise ValidationError({field: "At least one recipient is required."})
    if len(cleaned) > MAX_RECIPIENTS:
        raise ValidationError({field: f"At most {MAX_RECIPIENTS} recipients."})
    return cleaned


def clean_headers(headers: dict[str, str] | None) -> dict[str, str]:
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


def clean_key(key: str) -> str:
    key = (key or "").strip()
    if not key or len(key) > 255:
        raise ValidationError({"key": "An idempotency key of 1 to 255 characters is required."})
    return key


def message_id_for(key: str) -> str:
    """A stable Message-ID: a duplicate that slips through is recognisable as one."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"<{digest}@{conf.message_id_domain()}>"


def _clean_subject_line(subject: str) -> None:
    _refuse_control_chars(subject, field="subject")
    if len(subject) > _MAX_SUBJECT:
        raise ValidationError({"subject": "The subject is too long."})


def email_fields(
    *,
    to: list[str],
    subject: str,
    text: str,
    html: str = "",
    headers: dict[str, str] | None = None,
    purpose: str = "",
    ref: str = "",
) -> dict[str, Any]:
    """The columns of one email row, checked."""
    recipients = clean_addresses(to)
    subject = (subject or "").strip()
    if not subject:
        raise ValidationError({"subject": "A subject is required."})
    _clean_subject_line(subject)
    if not (text or "").strip():
        raise ValidationError({"text": "A plain-text body is required."})
    return {
        "channel": Channel.EMAIL,
        "destination": delivery.email_destination(),
        "to": recipients,
        "subject": subject,
        "body_text": text,
        "body_html": html or "",
        "headers": clean_headers(headers),
        "purpose": purpose,
        "ref": ref,
    }


def webhook_fields(
    *, url: str, payload: dict[str, Any], secret: str, purpose: str = "", ref: str = "", event: str = ""
) -> dict[str, Any]:
    """The columns of one webhook row, checked."""
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
    _refuse_control_chars(event, field="event")
    return {
        "channel": Channel.WEBHOOK,
        "headers": {"X-Status-Event": event} if event else {},
        "destination": delivery.webhook_destination(url),
        "url": url,
        "payload": payload,
        "secret": secret,
        "purpose": purpose,
        "ref": ref,
    }


def clean_shared_body(body: SharedBody, fills: dict[str, str]) -> None:
    """A shared body's subject and text, and the subject as each stand-in fills it."""
    if not body.subject.strip():
        raise ValidationError({"subject": "A subject is required."})
    if not body.text.strip():
        raise ValidationError({"text": "A plain-text body is required."})
    for mark, value in fills.items():
        if not isinstance(mark, str) or not mark or not isinstance(value, str):
            raise ValidationError({"fills": "Stand-ins and their values must be text."})
        if mark in body.subject:
            _clean_subject_line(body.subject.replace(mark, value))
    _clean_subject_line(body.subject)
