"""Who may send alerts: an integration's bearer token, or (generic kind) an HMAC over a
timestamp and the body, with a delivery id that is accepted once."""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from alerts.models import IntakeDelivery, Integration, secret_hash

_DELIVERY_ID = re.compile(r"^[\x21-\x7e]{1,200}$")


class IntakeUnauthorized(Exception):
    """Unknown integration, disabled, or wrong credentials (one message for all: no oracle)."""


def signature_for(*, secret: str, timestamp: int | str, delivery: str, body: bytes) -> str:
    """The generic kind's X-Signature-256: `sha256=<hex HMAC-SHA256 of
    "<timestamp>.<delivery>.<body>">`. The delivery id is signed too: were it not, whoever
    captured a request could send it again under a new id within the tolerance."""
    signed = f"{timestamp}.{delivery}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def integration_authenticate(
    *,
    integration_id: int,
    authorization: str,
    signature: str,
    body: bytes,
    timestamp: str = "",
    delivery: str = "",
    now: datetime | None = None,
) -> Integration:
    integration = Integration.objects.filter(pk=integration_id, is_active=True).first()
    if integration is None:
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    if integration.kind == Integration.Kind.GENERIC:
        _check_signed(integration, signature.strip(), timestamp.strip(), delivery.strip(), body, now)
        return integration
    scheme, _, token = (authorization or "").strip().partition(" ")
    stored = integration.secret_hash
    if not (
        stored and scheme.lower() == "bearer" and hmac.compare_digest(secret_hash(token.strip()), stored)
    ):
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    return integration


def _check_signed(
    integration: Integration, signature: str, timestamp: str, delivery: str, body: bytes, now: datetime | None
) -> None:
    if not signature:
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    if not timestamp.isdigit() or len(timestamp) > 12 or not _DELIVERY_ID.match(delivery):
        # A sender of the former scheme (an HMAC of the body alone) is told what changed.
        raise IntakeUnauthorized(
            "Send X-Status-Timestamp (Unix seconds), X-Status-Delivery (a unique id of 1 to 200 "
            'visible characters) and X-Signature-256 over "<timestamp>.<delivery>.<body>".'
        )
    expected = signature_for(secret=integration.secret, timestamp=timestamp, delivery=delivery, body=body)
    if not hmac.compare_digest(signature, expected):
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    now = now or timezone.now()
    tolerance = settings.ALERTS_SIGNATURE_TOLERANCE_SECONDS
    if abs(now.timestamp() - int(timestamp)) > tolerance:
        raise IntakeUnauthorized(
            f"X-Status-Timestamp is more than {tolerance} s from our clock: refused as a possible "
            "replay (check the sender's clock)."
        )
    try:
        with transaction.atomic():
            IntakeDelivery.objects.create(
                integration=integration,
                delivery_id=delivery,
                received_at=now,
            )
    except IntegrityError:
        raise IntakeUnauthorized(
            f"Delivery {delivery!r} was already received: replays are refused (send each delivery once, "
            "with a new X-Status-Delivery)."
        ) from None
