"""Counters every process adds to and /metrics reads: page-cache hits and rebuilds,
deliveries, alert intake. Design: docs/adr/0023-metrics.md.

A gunicorn or Celery process counts in memory and adds its counts to one Redis hash
(REDIS_URL) at most once per FLUSH_INTERVAL, from a short timer, so the hot path (a
page-cache hit answered from memory) never waits for a network round trip and any
process's /metrics sees every process's counts within about a second. Counts that could
not be written stay pending for the next flush (bounded: past MAX_PENDING series a
flush that keeps failing drops them, as a counter outage must not grow memory).

Without REDIS_URL (the embedded mode: one process) the counts stay in this process and
are read from here. Counters never raise: counting must not break what it counts.
Counts start at zero when Redis is emptied; Prometheus' rate() takes such resets.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from typing import cast

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

REDIS_KEY = "metrics:counters:v1"
FLUSH_INTERVAL = 1.0
MAX_PENDING = 10_000
SOCKET_TIMEOUT = 0.5

# A series: its name and its labels, sorted, as one JSON text (the Redis hash field).
Series = str

_lock = threading.Lock()
_pending: dict[Series, float] = {}
_local: dict[Series, float] = {}
_timer: threading.Timer | None = None
_clients: dict[str, redis.Redis] = {}


def _forget_after_fork() -> None:
    # A forked child (gunicorn --preload, Celery prefork) inherits the parent's pending
    # counts, which the parent flushes itself, and a timer whose thread did not follow.
    global _lock, _timer
    _lock = threading.Lock()
    _timer = None
    _pending.clear()
    _local.clear()
    _clients.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def series_key(name: str, labels: dict[str, str]) -> Series:
    return json.dumps([name, sorted(labels.items())], separators=(",", ":"))


def series_parse(series: Series) -> tuple[str, dict[str, str]]:
    name, labels = json.loads(series)
    return str(name), {str(k): str(v) for k, v in labels}


def _client() -> redis.Redis | None:
    url = settings.REDIS_URL
    if not url:
        return None
    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT
        )
    return client


def counter_add(name: str, amount: float = 1.0, **labels: str) -> None:
    """Add `amount` to the counter `name` with these labels (created at zero)."""
    _add({series_key(name, labels): amount})


def histogram_observe(name: str, value: float, buckets: Sequence[float], **labels: str) -> None:
    """One observation of a histogram kept as counters: `<name>_bucket` per upper bound
    (cumulative, as Prometheus reads them), `<name>_sum` and `<name>_count`."""
    # Every bound gets its series (0 when below the value), so histogram_quantile sees
    # the whole histogram from the first observation on.
    changes = {
        series_key(f"{name}_bucket", {**labels, "le": repr(float(bound))}): 1.0 if value <= bound else 0.0
        for bound in buckets
    }
    changes[series_key(f"{name}_bucket", {**labels, "le": "+Inf"})] = 1.0
    changes[series_key(f"{name}_sum", labels)] = value
    changes[series_key(f"{name}_count", labels)] = 1.0
    _add(changes)


def _add(changes: dict[Series, float]) -> None:
    global _timer
    try:
        shared = bool(settings.REDIS_URL)
        with _lock:
            target = _pending if shared else _local
            for series, amount in changes.items():
                target[series] = target.get(series, 0.0) + amount
            if shared and _timer is None:
                _timer = threading.Timer(FLUSH_INTERVAL, _flush_from_timer)
                _timer.daemon = True
                _timer.start()
    except Exception:
        logger.debug("counter not added", exc_info=True)


def _flush_from_timer() -> None:
    global _timer
    with _lock:
        _timer = None
    counters_flush()


def counters_flush() -> bool:
    """Add this process's pending counts to Redis; True when nothing is left pending."""
    client = _client()
    with _lock:
        batch = dict(_pending)
        _pending.clear()
    if not batch:
        return True
    if client is None:
        with _lock:
            for series, amount in batch.items():
                _local[series] = _local.get(series, 0.0) + amount
        return True
    try:
        pipe = client.pipeline(transaction=False)
        for series, amount in batch.items():
            pipe.hincrbyfloat(REDIS_KEY, series, amount)
        pipe.execute()
    except Exception:  # noqa: BLE001 - Redis down: keep the counts for the next flush
        with _lock:
            if len(_pending) + len(batch) <= MAX_PENDING:
                for series, amount in batch.items():
                    _pending[series] = _pending.get(series, 0.0) + amount
        return False
    return True


def counters_read() -> dict[Series, float]:
    """Every counter's total: every process's (Redis) or this process's (embedded).
    Raises when Redis does not answer: /metrics then says so instead of reporting zeros."""
    counters_flush()
    client = _client()
    if client is None:
        with _lock:
            return dict(_local)
    raw = cast("dict[bytes, bytes]", client.hgetall(REDIS_KEY))  # a sync client: never an Awaitable
    return {key.decode(): float(value) for key, value in raw.items()}


def counters_reset() -> None:
    """Forget every count, here and in Redis (tests)."""
    with _lock:
        _pending.clear()
        _local.clear()
    client = _client()
    if client is not None:
        with contextlib.suppress(redis.exceptions.RedisError):
            client.delete(REDIS_KEY)
    _clients.clear()
