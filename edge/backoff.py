"""One database backoff for every public read: after a failure, public pages and cached
API reads skip the database for a while (doubling per failure in a row, up to 8x).
Shared through the cache, so every process backs off together, and kept per process
too, so it still holds while the cache is away."""

from __future__ import annotations

import threading
import time

from django.conf import settings

from edge.shared_cache import cache_get, cache_set

DB_DOWN_KEY = "public-page:database-down"
MAX_BACKOFF_FACTOR = 8


class DatabaseBackoff:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._failures = 0  # in a row, in this process

    def note_down(self) -> None:
        with self._lock:
            now = time.monotonic()
            # Renders that were already under way when the database failed report the
            # same outage: only a failure after the backoff ended (a probe) doubles it.
            if self._down_until <= now:
                self._failures += 1
            factor = min(MAX_BACKOFF_FACTOR, 2 ** (self._failures - 1))
            seconds = settings.PUBLIC_CACHE_DB_BACKOFF * factor
            self._down_until = max(self._down_until, now + seconds)
        cache_set(DB_DOWN_KEY, 1, seconds)

    def note_ok(self) -> None:
        with self._lock:
            self._failures = 0

    def active(self) -> bool:
        if self._down_until > time.monotonic():
            return True
        return bool(cache_get(DB_DOWN_KEY))

    def reset(self) -> None:
        with self._lock:
            self._down_until, self._failures = 0.0, 0


database = DatabaseBackoff()
