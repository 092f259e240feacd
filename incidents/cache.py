"""The public-state version stamp.

Every write that changes what the public sees bumps this stamp after its transaction
commits. Cached renders of public pages and feeds are keyed by the stamp, so a change
is visible on the next request instead of after a TTL. The cache may be Redis, and
Redis may be down: failures here are logged and swallowed, never raised to the writer.
"""

from __future__ import annotations

import logging
import time

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

VERSION_KEY = "public-state-version"


def _bump() -> None:
    try:
        # A time-based stamp, not a counter: after the cache is flushed or restarted the
        # next stamp is still new, so nothing stale can match it.
        cache.set(VERSION_KEY, f"{time.time_ns():x}", timeout=None)
    except Exception:
        logger.warning("could not bump the public state version", exc_info=True)


def public_state_changed() -> None:
    """Call inside a service's transaction; the bump happens once it commits."""
    transaction.on_commit(_bump)


def public_state_version() -> str:
    try:
        version = cache.get(VERSION_KEY)
        if version is None:
            version = f"{time.time_ns():x}"
            cache.add(VERSION_KEY, version, timeout=None)
            version = cache.get(VERSION_KEY, version)
        return str(version)
    except Exception:
        logger.warning("could not read the public state version", exc_info=True)
        return "unavailable"
