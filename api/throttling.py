"""Throttles for anonymous and token callers, keyed on the real client address.

The client address is REMOTE_ADDR, or - only when settings.NUM_PROXIES says that many
trusted proxies sit in front of us - the entry those proxies appended to
X-Forwarded-For, counted from the right. Entries further left were written by the
client and can say anything, so forging the header never buys a fresh allowance.

The counters live in the "ratelimit" cache (Redis in production), apart from the page
cache, so that page entries cannot evict them. If the cache errors, the
throttle lets the request through: shedding load is worth less than answering while
Redis is being restarted.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from edge.cache_backend import CacheUnavailable

logger = logging.getLogger(__name__)


def _valid_ip(value: str) -> str | None:
    value = value.strip()
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def client_address(request: HttpRequest | Request) -> str:
    """The caller's address as far as our own proxies can vouch for it."""
    meta = request.META
    remote = meta.get("REMOTE_ADDR", "") or "unknown"
    num_proxies = int(getattr(settings, "NUM_PROXIES", 0) or 0)
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    if num_proxies <= 0 or not forwarded:
        return remote
    entries = [entry for entry in forwarded.split(",") if entry.strip()]
    if not entries:
        return remote
    # With N trusted proxies, the Nth entry from the right is the one the outermost
    # trusted proxy wrote about the peer it saw: the real client.
    chosen = entries[-min(num_proxies, len(entries))]
    return _valid_ip(chosen) or remote


def login_client_address(request: HttpRequest) -> str | None:
    """The same address for the admin login limiter (django-axes), which stores it in an
    IP column: None rather than "unknown" when there is no usable one."""
    return _valid_ip(client_address(request))


class _FailOpenRateThrottle(SimpleRateThrottle):
    def __init__(self) -> None:
        # Throttles are made per request: looked up here (not bound at import), so a
        # settings change of CACHES takes effect. A missing alias fails open below.
        try:
            self.cache = caches["ratelimit"]
        except Exception:  # noqa: BLE001
            logger.warning("no ratelimit cache configured; using the default cache")
        super().__init__()

    def get_rate(self) -> str | None:
        # Read the rate on every request (not once at import) so a settings change,
        # including one made by a test, takes effect.
        rates: dict[str, Any] = api_settings.DEFAULT_THROTTLE_RATES or {}
        return rates.get(self.scope or "")  # type: ignore[no-any-return]

    def get_ident(self, request: Request) -> str:
        return client_address(request)

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            allowed = super().allow_request(request, view)
        except CacheUnavailable:
            # The cache backend logged the outage once; a line per request would flood.
            return True
        except Exception:
            logger.warning("throttle cache unavailable; letting the request through", exc_info=True)
            return True
        if getattr(self, "key", None) is not None and self.rate is not None and hasattr(self, "history"):
            # Kept for the RateLimit-* headers (see rate_limit_headers).
            limit, duration = self.parse_rate(self.rate)
            assert limit is not None and duration is not None
            remaining = max(0, limit - len(self.history))
            oldest = self.history[-1] if self.history else self.now
            reset = max(1, int(duration - (self.now - oldest) + 0.999))
            request._request.rate_limit = (limit, remaining, reset)  # type: ignore[attr-defined]
        return allowed

    def wait(self) -> float | None:
        wait = super().wait()
        # Retry-After is an integer of seconds; never tell a client "0".
        return None if wait is None else max(1.0, wait)


def rate_limit_headers(request: Request) -> dict[str, str]:
    """`RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds until the
    window frees a request), the names of the IETF httpapi draft, from the throttle that
    counted this request. Empty when no throttle counted it (or its cache was down)."""
    state = getattr(request._request, "rate_limit", None)
    if state is None:
        return {}
    limit, remaining, reset = state
    return {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(remaining),
        "RateLimit-Reset": str(reset),
    }


class AnonymousThrottle(_FailOpenRateThrottle):
    """Callers without credentials, per client address."""

    scope = "anon"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.user and request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class TokenThrottle(_FailOpenRateThrottle):
    """Authenticated callers, per user: a token is an identity, whatever address it uses."""

    scope = "token"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not (request.user and request.user.is_authenticated):
            return None
        return self.cache_format % {"scope": self.scope, "ident": f"user-{request.user.pk}"}


DEFAULT_THROTTLES = [AnonymousThrottle, TokenThrottle]
