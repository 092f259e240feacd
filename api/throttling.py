"""DRF throttles for anonymous and token callers: thin adapters over the one rate limiter
(edge.ratelimit), keyed on the client address it trusts or on the user."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from edge import ratelimit
from edge.ratelimit import client_address


class _FailOpenRateThrottle(SimpleRateThrottle):
    """Counts through edge.ratelimit.hit (which fails open); subclasses name the scope and
    the identity (get_cache_key), and may override get_rate."""

    def __init__(self) -> None:
        # No cache is bound here (edge.ratelimit owns it); only the rate is read, per
        # request, so a settings change (tests make some) takes effect.
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.verdict: ratelimit.Verdict | None = None

    def get_rate(self) -> str | None:
        rates: dict[str, Any] = api_settings.DEFAULT_THROTTLE_RATES or {}
        return rates.get(self.scope or "")  # type: ignore[no-any-return]

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.num_requests is None or self.duration is None:
            return True
        ident = self.get_cache_key(request, view)
        if ident is None:
            return True
        self.verdict = verdict = ratelimit.hit(
            scope=self.scope or "api", value=ident, limit=self.num_requests, window=self.duration
        )
        if verdict.limit is not None:
            # Kept for the RateLimit headers (see rate_limit_headers).
            request._request.rate_limit = (  # type: ignore[attr-defined]
                self.scope or "api",
                verdict.limit,
                self.duration,
                verdict.remaining,
                verdict.retry_after,
            )
        return verdict.allowed

    def wait(self) -> float | None:
        # Retry-After is an integer of seconds; never tell a client "0".
        return None if self.verdict is None else float(max(1, self.verdict.retry_after))


def rate_limit_headers(request: Request) -> dict[str, str]:
    """`RateLimit-Policy` and `RateLimit` per the IETF httpapi draft
    (draft-ietf-httpapi-ratelimit-headers-09 and later), from the throttle that counted
    this request: `RateLimit-Policy: "anon";q=300;w=60` (quota, window in seconds) and
    `RateLimit: "anon";r=42;t=17` (requests remaining, seconds until the window frees
    one). Empty when no throttle counted it (or its cache was down)."""
    state = getattr(request._request, "rate_limit", None)
    if state is None:
        return {}
    policy, limit, window, remaining, reset = state
    return {
        "RateLimit-Policy": f'"{policy}";q={limit};w={window}',
        "RateLimit": f'"{policy}";r={max(0, remaining)};t={max(0, reset)}',
    }


class AnonymousThrottle(_FailOpenRateThrottle):
    """Callers without credentials, per client address."""

    scope = "anon"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.user and request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class TokenThrottle(_FailOpenRateThrottle):
    """Authenticated callers, per user: a token is an identity, whatever address it uses."""

    scope = "token"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not (request.user and request.user.is_authenticated):
            return None
        return self.cache_format % {"scope": self.scope, "ident": f"user-{request.user.pk}"}


class SchemaThrottle(AnonymousThrottle):
    """Anonymous requests for /api/schema/, per client address (rate "schema")."""

    scope = "schema"


DEFAULT_THROTTLES = [AnonymousThrottle, TokenThrottle]
