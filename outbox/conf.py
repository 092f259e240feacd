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


def give_up_days() -> float:
    # Outage-type failures (destination down) do not spend attempts; a message stops
    # only once it is this old, so an outage of hours loses nothing.
    return float(getattr(settings, "OUTBOX_GIVE_UP_DAYS", 3))


def batch_size() -> int:
    return int(getattr(settings, "OUTBOX_BATCH_SIZE", 100))


def breaker_threshold() -> int:
    return int(getattr(settings, "OUTBOX_BREAKER_THRESHOLD", 3))


def breaker_cooldown() -> float:
    return float(getattr(settings, "OUTBOX_BREAKER_COOLDOWN", 30))


def breaker_max_cooldown() -> float:
    return float(getattr(settings, "OUTBOX_BREAKER_MAX_COOLDOWN", 300))


def publish_timeout() -> float:
    # The longest a web request or command waits on the broker after its commit.
    return float(getattr(settings, "OUTBOX_PUBLISH_TIMEOUT", 0.2))


def kick_lost_seconds() -> float:
    # A queued delivery task nobody took for this long is presumed lost (Redis flushed or
    # restarted empty): the sweeper queues another. If it was only waiting behind busy
    # workers, that adds one harmless task per period per destination, no more.
    return float(getattr(settings, "OUTBOX_KICK_LOST_SECONDS", 2 * sweep_grace_seconds()))
