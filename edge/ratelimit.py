"""Who is calling, and how often: the client address our own proxies vouch for, and the
one rate limiter every surface uses (the API throttles, the subscribe form).

The counters live in the "ratelimit" cache (Redis in production), apart from the page
cache so page entries cannot evict them. If that cache errors the limiter lets the
request through: refusing everyone would take the page down with Redis.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.core.cache.backends.base import InvalidCacheBackendError

from edge.cache_backend import CacheUnavailable

logger = logging.getLogger(__name__)


class HasMeta(Protocol):
    """A Django request or a DRF one."""

    @property
    def META(self) -> Mapping[str, Any]: ...


def _valid_ip(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_address(request: HasMeta) -> str:
    """The caller's address: REMOTE_ADDR, or with settings.NUM_PROXIES trusted proxies in
    front of us, the X-Forwarded-For entry the outermost of them wrote (counted from the
    right). Entries further left were written by the client and can say anything, so
    forging the header never buys a fresh allowance; an entry that is no IP is ignored."""
    meta = request.META
    remote: str = meta.get("REMOTE_ADDR", "") or "unknown"
    num_proxies = int(settings.NUM_PROXIES or 0)
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    if num_proxies <= 0 or not forwarded:
        return remote
    entries = [entry for entry in forwarded.split(",") if entry.strip()]
    if not entries:
        return remote
    chosen = entries[-min(num_proxies, len(entries))]
    return _valid_ip(chosen) or remote


def login_client_address(request: HasMeta) -> str | None:
    """The same address for the admin login limiter (django-axes), which stores it in an
    IP column: None rather than "unknown" when there is no usable one."""
    return _valid_ip(client_address(request))


def _counters() -> BaseCache:
    try:
        return caches["ratelimit"]
    except InvalidCacheBackendError:
        logger.warning("no ratelimit cache configured; using the default cache")
        return caches["default"]


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    # None when nothing was counted (the cache is down): no RateLimit-* headers then.
    limit: int | None = None
    remaining: int = 0
    # Seconds until the window ends (at least 1).
    retry_after: int = 0


def hit(*, scope: str, value: str, limit: int, window: int) -> Verdict:
    """Count one request for (scope, value); refuse past `limit` within `window` seconds.

    A window opens at the caller's first request and lasts `window` seconds (not a slot
    of the wall clock, so a burst cannot straddle a boundary to get twice the limit).
    """
    now = time.time()
    # Hashed: the cache must not hold addresses or emails in clear either.
    digest = hashlib.sha256(value.encode()).hexdigest()[:32]
    start_key = f"rl:{scope}:{digest}:start"
    try:
        counters = _counters()
        counters.add(start_key, now, timeout=window)
        start = float(counters.get(start_key) or now)
        # add-then-incr is atomic in Redis: concurrent requests cannot lose a count.
        key = f"rl:{scope}:{digest}:{int(start * 1000)}"
        counters.add(key, 0, timeout=window + 5)
        count = int(counters.incr(key))
    except CacheUnavailable:
        return Verdict(allowed=True)  # the cache backend logged the outage once
    except Exception:
        logger.warning("rate limit cache unavailable; letting the request through", exc_info=True)
        return Verdict(allowed=True)
    return Verdict(
        allowed=count <= limit,
        limit=limit,
        remaining=max(0, limit - count),
        retry_after=max(1, int(start + window - now + 0.999)),
    )
