from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

# The SLA/outbox integration tests own one Redis database (14 unless OUTBOX_TEST_REDIS_DB
# says otherwise; other suites use other numbers), whatever TEST_REDIS_URL names: they
# flush it.
OUTBOX_REDIS_DB = int(os.environ.get("OUTBOX_TEST_REDIS_DB", "14"))


@pytest.fixture
def outbox_redis_url(redis_url: str) -> str:
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{OUTBOX_REDIS_DB}", parts.query, parts.fragment))


@pytest.fixture
def broker(outbox_redis_url: str) -> Iterator[redis.Redis]:
    """Point this process's Celery app at the real Redis test database (not eager).

    The database is flushed before and after, so nothing queued leaks between tests.
    """
    from statuspage.celery import app

    client = redis.Redis.from_url(outbox_redis_url)
    client.flushdb()
    saved = {
        "broker_url": app.conf.broker_url,
        "task_always_eager": app.conf.task_always_eager,
        "broker_transport_options": app.conf.broker_transport_options,
    }
    app.conf.broker_url = outbox_redis_url  # type: ignore[misc]
    app.conf.task_always_eager = False
    app.conf.broker_transport_options = {
        "visibility_timeout": 30,
        "socket_connect_timeout": 1,
        "socket_timeout": 2,
    }
    app._pool = None  # type: ignore[attr-defined]  # connections are pooled per broker URL: drop the memory:// ones
    app.amqp._producer_pool = None  # type: ignore[attr-defined]
    try:
        yield client
    finally:
        for key, value in saved.items():
            setattr(app.conf, key, value)
        app._pool = None  # type: ignore[attr-defined]
        app.amqp._producer_pool = None  # type: ignore[attr-defined]
        client.flushdb()
        client.close()
