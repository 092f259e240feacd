"""What the page cache and the cached API reads share: guarded cache calls, one database
backoff for every public read, the per-process limit on concurrent rebuilds, and the
headers of a stale answer.

Guarded calls never raise: a cache error is a miss (reads) or a no-op kept in a small
per-process fallback (writes). They log nothing: the cache backend logs one line per
outage (edge/cache_backend.py), where a log line per call used to flood the logs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import BaseCache, cache, caches
from django.http import HttpResponseBase

SNAPSHOT_HEADER = "X-Status-Snapshot"


class Unavailable(Exception):
    """A public read that cannot be answered in time and has no older copy: the caller
    gets 503 + Retry-After (DatabaseUnavailableMiddleware), without a traceback."""

    def __init__(
        self, *, retry_after: int, message: str = "This page is being refreshed. Please retry shortly."
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.message = message


DB_DOWN_KEY = "public-page:database-down"
LOCAL_FALLBACK_TTL = 5.0

_local: dict[str, tuple[float, Any]] = {}
_local_lock = threading.Lock()


def pages_cache() -> BaseCache:
    """Where page bodies live: an evictable cache of their own when configured."""
    return caches[settings.PUBLIC_PAGE_CACHE_ALIAS]


def cache_get(key: str, *, store: BaseCache | None = None) -> Any:
    try:
        return (store or cache).get(key)
    except Exception:  # noqa: BLE001 - the shared cache is optional for correctness
        with _local_lock:
            hit = _local.get(key)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return None


def cache_set(key: str, value: Any, timeout: float, *, store: BaseCache | None = None) -> None:
    try:
        (store or cache).set(key, value, timeout=timeout)
    except Exception:  # noqa: BLE001
        with _local_lock:
            if len(_local) > 512:
                _local.clear()  # bounded: it only bridges an outage
            _local[key] = (time.monotonic() + min(timeout, LOCAL_FALLBACK_TTL), value)


def cache_add(key: str, value: Any, timeout: float) -> bool | None:
    """True if added, False if present, None if the cache is unreachable."""
    try:
        return bool(cache.add(key, value, timeout=timeout))
    except Exception:  # noqa: BLE001
        return None


def cache_delete(key: str) -> None:
    # A lock that cannot be released expires by itself.
    with contextlib.suppress(Exception):
        cache.delete(key)


# --- One backoff for every public read -----------------------------------------------------
# Shared through the cache (every process backs off together) and kept per process too
# (so it still holds while the cache is away).

_db_down_until = 0.0
_db_failures = 0  # in a row, in this process: the backoff doubles with each, up to 8x
MAX_BACKOFF_FACTOR = 8


def note_database_down() -> None:
    global _db_down_until, _db_failures
    _db_failures += 1
    seconds = settings.PUBLIC_CACHE_DB_BACKOFF * min(MAX_BACKOFF_FACTOR, 2 ** (_db_failures - 1))
    _db_down_until = time.monotonic() + seconds
    cache_set(DB_DOWN_KEY, 1, seconds)


def note_database_ok() -> None:
    global _db_failures
    _db_failures = 0


def database_backing_off() -> bool:
    if _db_down_until > time.monotonic():
        return True
    return bool(cache_get(DB_DOWN_KEY))


def reset() -> None:
    """Forget the per-process state (tests)."""
    global _db_down_until, _rebuilding, _db_failures
    _db_down_until, _db_failures = 0.0, 0
    with _local_lock:
        _local.clear()
    with _slots_lock:
        _rebuilding = 0


# --- Concurrent rebuilds per process -------------------------------------------------------

_slots_lock = threading.Lock()
_rebuilding = 0


def take_rebuild_slot() -> bool:
    global _rebuilding
    with _slots_lock:
        if _rebuilding >= settings.PUBLIC_MAX_REBUILDS:
            return False
        _rebuilding += 1
        return True


def release_rebuild_slot() -> None:
    global _rebuilding
    with _slots_lock:
        _rebuilding = max(0, _rebuilding - 1)


# --- A stale answer ---------------------------------------------------------------------------


def stale_etag(etag: str) -> str:
    """A weak validator of its own: a stale copy must never revalidate as the fresh page."""
    inner = etag.removeprefix("W/").strip('"')
    return f'W/"{inner}-stale"'


def mark_stale(response: HttpResponseBase, *, built_at: float) -> None:
    age = max(0, int(time.time() - built_at))
    response["Age"] = str(age)
    response[SNAPSHOT_HEADER] = "stale"
    response["X-Snapshot-Age"] = str(age)
    # Short: a shared cache (nginx, a CDN) must come back for the fresh page soon.
    response["Cache-Control"] = f"public, max-age={settings.PUBLIC_STALE_MAX_AGE}"
