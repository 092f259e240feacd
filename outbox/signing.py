"""Webhook signatures: Standard Webhooks 1.0, and the `sha256=` scheme it replaces.

Standard Webhooks (https://www.standardwebhooks.com/): `webhook-id`, `webhook-timestamp`
and `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed by
the secret's bytes; a secret is shown as `whsec_<base64 of those bytes>`. A secret stored
in the old form (hex, from before the change) keys both schemes with its ASCII bytes, so
its owner verifies the new headers with `whsec_` + base64 of the hex text (the manage page
shows it) and keeps the old `X-Status-Signature` until the sunset below. Policy and dates:
docs/subscriptions.md ("Webhook signatures").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from datetime import UTC, datetime

SECRET_PREFIX = "whsec_"  # noqa: S105 - the public prefix of the format, not a secret
SECRET_BYTES = 32

# The `sha256=` scheme's deprecation period (RFC 9745 `Deprecation`, RFC 8594 `Sunset`):
# sent on every request still signed the old way, and written in the docs.
LEGACY_DEPRECATED_AT = datetime(2026, 12, 7, tzinfo=UTC)
LEGACY_SUNSET_AT = datetime(2027, 6, 7, tzinfo=UTC)


def new_secret() -> str:
    """A fresh Standard Webhooks secret: `whsec_` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def is_legacy_secret(secret: str) -> bool:
    """A secret from before Standard Webhooks (anything not `whsec_...`)."""
    return not secret.startswith(SECRET_PREFIX)


def secret_key(secret: str) -> bytes:
    """The HMAC key a stored secret stands for."""
    if is_legacy_secret(secret):
        return secret.encode()
    try:
        return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a whsec_ secret must be base64") from None


def standard_secret(secret: str) -> str:
    """The secret as Standard Webhooks libraries take it (`whsec_<base64 key>`)."""
    if not is_legacy_secret(secret):
        return secret
    return SECRET_PREFIX + base64.b64encode(secret_key(secret)).decode()


def standard_signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def legacy_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The deprecated scheme: `sha256=` + hex HMAC-SHA256 of `{timestamp}.{body}`."""
    signed = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def webhook_id(idempotency_key: str) -> str:
    """The delivery's `webhook-id`: derived from its outbox key, so every retry of one
    delivery carries the same id (and the same `X-Status-Delivery`)."""
    return "msg_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]


def _http_date(value: datetime) -> str:
    return value.strftime("%a, %d %b %Y %H:%M:%S GMT")


def signature_headers(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Every signature header of one attempt: the standard three, and for a secret in the
    old form the old pair with the deprecation announced."""
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, msg_id=msg_id, timestamp=timestamp, body=body),
    }
    if is_legacy_secret(secret):
        headers.update(
            {
                "X-Status-Timestamp": str(timestamp),
                "X-Status-Signature": legacy_signature(secret, timestamp, body),
                # RFC 9745: a structured-field date; RFC 8594: an HTTP date.
                "Deprecation": f"@{int(LEGACY_DEPRECATED_AT.timestamp())}",
                "Sunset": _http_date(LEGACY_SUNSET_AT),
            }
        )
    return headers
