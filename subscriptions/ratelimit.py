"""Fixed-window counters in the cache for the public subscribe form.

The cache may be Redis and Redis may be down: then the limiter lets requests through
(fails open) and logs, because refusing everyone would take the page down with Redis.
The database still bounds confirmation emails per address (see services).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest

from edge.cache_backend import CacheUnavailable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int = 0


def hit(*, scope: str, value: str, limit: int, window: int) -> Verdict:
    """Count one request for (scope, value); refuse once `limit` is passed in this window."""
    now = time.time()
    bucket = int(now // window)
    # Hashed: the cache must not hold addresses in clear either.
    digest = hashlib.sha256(value.encode()).hexdigest()[:32]
    key = f"subscriptions:rl:{scope}:{digest}:{bucket}"
    try:
        # The counters' own cache: page entries in the default cache cannot evict them.
        counters = caches["ratelimit"]
        counters.add(key, 0, timeout=window + 5)
        count = counters.incr(key)
    except CacheUnavailable:
        return Verdict(allowed=True)  # the cache backend logged the outage once
    except Exception:
        logger.warning(
            "subscribe rate limit unavailable (cache error); letting the request through", exc_info=True
        )
        return Verdict(allowed=True)
    if count > limit:
        return Verdict(allowed=False, retry_after=max(1, int((bucket + 1) * window - now)))
    return Verdict(allowed=True)


def client_ip(request: HttpRequest) -> str:
    """The client address: REMOTE_ADDR, or the entry our own proxies appended.

    X-Forwarded-For is client-controlled except for the entries added by the trusted
    proxies in front of us (settings.NUM_PROXIES of them), so only the one written by
    the outermost trusted proxy counts: forging the header cannot reset a limit.
    """
    remote = request.META.get("REMOTE_ADDR", "") or "unknown"
    proxies = int(getattr(settings, "NUM_PROXIES", 0) or 0)
    if proxies <= 0:
        return remote
    forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
    if len(forwarded) >= proxies:
        return forwarded[-proxies]
    return remote
