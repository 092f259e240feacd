"""A Redis cache that fails fast: short socket timeouts and a per-process circuit breaker
(open for CACHE_BREAKER_SECONDS after a failure, then one probing call), so a paused
Redis costs milliseconds per request, with one log line per outage.
Design: docs/adr/0003-page-cache.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import redis
from django.conf import settings
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)

T = TypeVar("T")

# What a dead, paused or unreachable server raises; anything else (a bad key, a value
# that does not pickle) is a bug and goes through untouched.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    OSError,
)


class CacheUnavailable(ConnectionError):
    """The cache server failed moments ago; this call was not sent."""


class Breaker:
    """Closed (calls go through), open (calls fail fast) or probing (one call goes through)."""

    def __init__(self, name: str, *, cooldown: Callable[[], float]) -> None:
        self.name = name
        self._cooldown = cooldown
        self._lock = threading.Lock()
        self._open_until = 0.0
        self._probing = False
        self._outage_started: float | None = None

    @property
    def is_open(self) -> bool:
        return self._outage_started is not None

    def before_call(self) -> None:
        if self._outage_started is None:
            return
        with self._lock:
            if self._outage_started is None:
                return
            if self._probing or time.monotonic() < self._open_until:
                raise CacheUnavailable(f"cache server {self.name} is unavailable (breaker open)")
            self._probing = True  # this caller is the probe

    def succeeded(self) -> None:
        if self._outage_started is None:
            return
        with self._lock:
            if self._outage_started is not None:
                logger.warning(
                    "cache server %s is back after %.1f s", self.name, time.monotonic() - self._outage_started
                )
            self._outage_started = None
            self._probing = False

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = self._outage_started is None
            now = time.monotonic()
            if first:
                self._outage_started = now
            self._open_until = now + self._cooldown()
            self._probing = False
        if first:
            # Once per outage, without a traceback: the reason is in the one line.
            logger.warning(
                "cache server %s unavailable (%s: %s); failing fast for %.1f s at a time until it answers",
                self.name,
                type(exc).__name__,
                exc,
                self._cooldown(),
            )


_breakers: dict[str, Breaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(location: str) -> Breaker:
    with _breakers_lock:
        breaker = _breakers.get(location)
        if breaker is None:
            breaker = _breakers[location] = Breaker(
                location.split("@")[-1], cooldown=lambda: float(settings.CACHE_BREAKER_SECONDS)
            )
        return breaker


def reset_breakers() -> None:
    """Close every breaker (tests, or a process that knows the server is back)."""
    with _breakers_lock:
        _breakers.clear()


def _guarded(method: Callable[..., T]) -> Callable[..., T]:
    @wraps(method)
    def call(self: ResilientRedisCache, *args: Any, **kwargs: Any) -> T:
        breaker = breaker_for(self._location_key)
        breaker.before_call()
        try:
            result = method(self, *args, **kwargs)
        except OUTAGE_ERRORS as exc:
            breaker.failed(exc)
            raise CacheUnavailable(str(exc)) from exc
        except BaseException:
            breaker.succeeded()  # the server answered; the error is the caller's
            raise
        breaker.succeeded()
        return result

    return call


class ResilientRedisCache(RedisCache):
    """django's RedisCache behind the breaker above. Same options, same keys."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._location_key = server if isinstance(server, str) else ",".join(server)

    get = _guarded(RedisCache.get)
    set = _guarded(RedisCache.set)
    add = _guarded(RedisCache.add)
    touch = _guarded(RedisCache.touch)
    delete = _guarded(RedisCache.delete)
    get_many = _guarded(RedisCache.get_many)
    set_many = _guarded(RedisCache.set_many)
    delete_many = _guarded(RedisCache.delete_many)
    has_key = _guarded(RedisCache.has_key)
    incr = _guarded(RedisCache.incr)
    clear = _guarded(RedisCache.clear)


def breaker_states() -> dict[str, bool]:
    """This process's breakers: server name -> open (/metrics)."""
    with _breakers_lock:
        return {breaker.name: breaker.is_open for breaker in _breakers.values()}
