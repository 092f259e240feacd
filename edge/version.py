"""The public-state version stamp.

Every write that changes what the public sees bumps this stamp after its transaction
commits. Cached renders of public pages and feeds are keyed by the stamp, so a change
is visible on the next request instead of after a TTL. The cache may be Redis, and
Redis may be down: failures here are logged and swallowed, never raised to the writer.
"""

from __future__ import annotations

import logging
import secrets
import time

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

VERSION_KEY = "public-state-version"


def new_version() -> str:
    """A time-based stamp, not a counter: after the cache is flushed or restarted the next
    stamp is still new, so nothing stale can match it. 16 hex digits of nanoseconds (read
    back by http_cache.version_time for Last-Modified), then random bits, so two stamps
    made in the same nanosecond (or under a frozen test clock) still differ."""
    return f"{time.time_ns():016x}{secrets.randbits(32):08x}"


def _bump() -> None:
    try:
        cache.set(VERSION_KEY, new_version(), timeout=None)
    except Exception:
        logger.warning("could not bump the public state version", exc_info=True)


def public_state_changed() -> None:
    """Call inside a service's transaction; the bump happens once it commits."""
    transaction.on_commit(_bump)


def public_state_version() -> str:
    try:
        version = cache.get(VERSION_KEY)
        if version is None:
            version = new_version()
            cache.add(VERSION_KEY, version, timeout=None)
            version = cache.get(VERSION_KEY, version)
        return str(version)
    except Exception:
        logger.warning("could not read the public state version", exc_info=True)
        return "unavailable"
