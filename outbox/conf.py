"""Outbox settings with their defaults, read at call time so tests can override them."""

from __future__ import annotations

from django.conf import settings


def lease_seconds() -> float:
    # Longer than the slowest honest attempt (connect + EHLO + DATA, each bounded by
    # EMAIL_TIMEOUT), so a live worker never loses its claim mid-send.
    return float(settings.OUTBOX_LEASE_SECONDS)


def max_attempts() -> int:
    return int(settings.OUTBOX_MAX_ATTEMPTS)


def retry_base_delay() -> float:
    return float(settings.OUTBOX_RETRY_BASE_DELAY)


def retry_max_delay() -> float:
    return float(settings.OUTBOX_RETRY_MAX_DELAY)


def sweep_grace_seconds() -> float:
    return float(settings.OUTBOX_SWEEP_GRACE_SECONDS)


def sweep_batch() -> int:
    return int(settings.OUTBOX_SWEEP_BATCH)


def message_id_domain() -> str:
    return str(settings.EMAIL_MESSAGE_ID_DOMAIN or "localhost")


def webhook_timeout() -> float:
    return float(settings.WEBHOOK_TIMEOUT)


def webhook_allow_private() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE)


def visibility_timeout() -> float:
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS or {}
    return float(options.get("visibility_timeout", 3600))


def smtp_idle_seconds() -> float:
    # Well under typical server idle timeouts (RFC 5321 suggests 5 minutes).
    return float(settings.OUTBOX_SMTP_IDLE_SECONDS)


def give_up_days() -> float:
    # Outage-type failures (destination down) do not spend attempts; a message stops
    # only once it is this old, so an outage of hours loses nothing.
    return float(settings.OUTBOX_GIVE_UP_DAYS)


def batch_size() -> int:
    return int(settings.OUTBOX_BATCH_SIZE)


def breaker_threshold() -> int:
    return int(settings.OUTBOX_BREAKER_THRESHOLD)


def breaker_cooldown() -> float:
    return float(settings.OUTBOX_BREAKER_COOLDOWN)


def breaker_max_cooldown() -> float:
    return float(settings.OUTBOX_BREAKER_MAX_COOLDOWN)


def publish_timeout() -> float:
    # The longest a web request or command waits on the broker after its commit.
    return float(settings.OUTBOX_PUBLISH_TIMEOUT)


def kick_lost_seconds() -> float:
    # A queued delivery task nobody took for this long is presumed lost (Redis flushed or
    # restarted empty): the sweeper queues another. If it was only waiting behind busy
    # workers, that adds one harmless task per period per destination, no more.
    return float(settings.OUTBOX_KICK_LOST_SECONDS)
