"""Outbox settings with their defaults, read at call time so tests can override them."""

from __future__ import annotations

from django.conf import settings


def lease_seconds() -> float:
    # Longer than the slowest honest attempt (connect + EHLO + DATA, each bounded by
    # EMAIL_TIMEOUT), so a live worker never loses its claim mid-send.
    return float(getattr(settings, "OUTBOX_LEASE_SECONDS", 300))


def max_attempts() -> int:
    return int(getattr(settings, "OUTBOX_MAX_ATTEMPTS", 8))


def retry_base_delay() -> float:
    return float(getattr(settings, "OUTBOX_RETRY_BASE_DELAY", 30))


def retry_max_delay() -> float:
    return float(getattr(settings, "OUTBOX_RETRY_MAX_DELAY", 900))


def sweep_grace_seconds() -> float:
    return float(getattr(settings, "OUTBOX_SWEEP_GRACE_SECONDS", 60))


def sweep_batch() -> int:
    return int(getattr(settings, "OUTBOX_SWEEP_BATCH", 500))


def message_id_domain() -> str:
    return str(getattr(settings, "EMAIL_MESSAGE_ID_DOMAIN", "") or "localhost")


def webhook_timeout() -> float:
    return float(getattr(settings, "WEBHOOK_TIMEOUT", 10))


def webhook_allow_private() -> bool:
    return bool(getattr(settings, "WEBHOOK_ALLOW_PRIVATE", False))


def visibility_timeout() -> float:
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
    return float(options.get("visibility_timeout", 3600))


def smtp_idle_seconds() -> float:
    # Well under typical server idle timeouts (RFC 5321 suggests 5 minutes).
    return float(getattr(settings, "OUTBOX_SMTP_IDLE_SECONDS", 30))
