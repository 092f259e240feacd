"""Cache calls that never raise: a cache error is a miss (reads) or a write kept for a
few seconds in a small per-process fallback. They log nothing: the cache backend logs
one line per outage (edge/cache_backend.py)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import BaseCache, cache, caches

LOCAL_FALLBACK_TTL = 5.0
LOCAL_FALLBACK_MAX_ENTRIES = 512


class LocalFallback:
    """Writes the shared cache refused, kept briefly: it only bridges an outage."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            hit = self._entries.get(key)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return None

    def put(self, key: str, value: Any, timeout: float) -> None:
        with self._lock:
            if len(self._entries) > LOCAL_FALLBACK_MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + min(timeout, LOCAL_FALLBACK_TTL), value)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


local_fallback = LocalFallback()


def pages_cache() -> BaseCache:
    """Where page bodies live: an evictable cache of their own when configured."""
    return caches[settings.PUBLIC_PAGE_CACHE_ALIAS]


def cache_get(key: str, *, store: BaseCache | None = None) -> Any:
    try:
        return (store or cache).get(key)
    except Exception:  # noqa: BLE001 - the shared cache is optional for correctness
        return local_fallback.get(key)


def cache_set(key: str, value: Any, timeout: float, *, store: BaseCache | None = None) -> None:
    try:
        (store or cache).set(key, value, timeout=timeout)
    except Exception:  # noqa: BLE001
        local_fallback.put(key, value, timeout)


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
