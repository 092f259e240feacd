"""Who may send alerts: an integration's bearer token, or the HMAC of the body (generic kind)."""

from __future__ import annotations

import hashlib
import hmac

from alerts.models import Integration


class IntakeUnauthorized(Exception):
    """Unknown integration, disabled, or wrong credentials (one message for all: no oracle)."""


def signature_for(*, secret: str, body: bytes) -> str:
    """The generic kind's signature header value: `sha256=<hex HMAC-SHA256 of the body>`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def integration_authenticate(
    *, integration_id: int, authorization: str, signature: str, body: bytes
) -> Integration:
    integration = Integration.objects.filter(pk=integration_id, is_active=True).first()
    if integration is None:
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    if integration.kind == Integration.Kind.GENERIC:
        ok = hmac.compare_digest(signature.strip(), signature_for(secret=integration.secret, body=body))
    else:
        scheme, _, token = (authorization or "").strip().partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(token.strip(), integration.secret)
    if not ok:
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    return integration
