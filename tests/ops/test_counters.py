"""edge/counters.py: counts shared through Redis by every process, or kept in process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from edge import counters
from tests.waiting import wait_for


@pytest.fixture
def shared(settings: Any, redis_url: str) -> Iterator[redis.Redis]:
    settings.REDIS_URL = redis_url
    counters.counters_reset()
    yield redis.Redis.from_url(redis_url)
    counters.counters_reset()


def _totals() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for series, value in counters.counters_read().items():
        name, labels = counters.series_parse(series)
        out[(name, tuple(sorted(labels.items())))] = value
    return out


def test_it_shares_counts_through_redis(shared: redis.Redis) -> None:
    counters.counter_add("page_cache_hits", page="index")
    counters.counter_add("page_cache_hits", 2, page="index")
    # Nothing in Redis before the flush timer (the hot path makes no round trip)...
    assert shared.hgetall(counters.REDIS_KEY) == {}
    # ... and everything once it fired, as another process would read it.
    wait_for(lambda: shared.hgetall(counters.REDIS_KEY) != {}, timeout=5)
    field = counters.series_key("page_cache_hits", {"page": "index"})
    assert shared.hget(counters.REDIS_KEY, field) == b"3"
    # Another process's count adds up in the same hash.
    shared.hincrbyfloat(counters.REDIS_KEY, field, 4)
    assert _totals()[("page_cache_hits", (("page", "index"),))] == 7


def test_it_keeps_counts_while_redis_is_down(settings: Any, shared: redis.Redis) -> None:
    good = settings.REDIS_URL
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    counters.counter_add("outbox_deliveries", channel="email", outcome="sent")
    assert counters.counters_flush() is False
    with pytest.raises(redis.exceptions.ConnectionError):
        counters.counters_read()
    settings.REDIS_URL = good
    assert counters.counters_flush() is True
    assert _totals() == {("outbox_deliveries", (("channel", "email"), ("outcome", "sent"))): 1}


def test_it_counts_in_process_without_redis(settings: Any) -> None:
    settings.REDIS_URL = ""
    counters.counters_reset()
    counters.histogram_observe("latency_seconds", 7.0, (5.0, 10.0), channel="email")
    assert _totals() == {
        ("latency_seconds_bucket", (("channel", "email"), ("le", "5.0"))): 0,
        ("latency_seconds_bucket", (("channel", "email"), ("le", "10.0"))): 1,
        ("latency_seconds_bucket", (("channel", "email"), ("le", "+Inf"))): 1,
        ("latency_seconds_sum", (("channel", "email"),)): 7.0,
        ("latency_seconds_count", (("channel", "email"),)): 1,
    }
    counters.counters_reset()


def _count_in_child(times: int) -> None:
    for _ in range(times):
        counters.counter_add("outbox_deliveries", channel="email", outcome="sent")
    assert counters.counters_flush()  # what a child's timer does within a second


def test_it_adds_up_counts_of_forked_processes(shared: redis.Redis) -> None:
    import multiprocessing

    counters.counter_add("outbox_deliveries", channel="email", outcome="sent")  # pending in the parent
    fork = multiprocessing.get_context("fork")
    children = [fork.Process(target=_count_in_child, args=(n,)) for n in (2, 3)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=30)
        assert child.exitcode == 0
    # 2 + 3 from the children; the parent's pending 1 was not inherited and counted twice.
    assert _totals() == {("outbox_deliveries", (("channel", "email"), ("outcome", "sent"))): 6}
