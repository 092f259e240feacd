"""Waiting for a page another process is rendering, on a real signal: the renderer
publishes on a Redis channel once the page is stored; a waiter subscribes, checks the
cache once (the page may already be there) and sleeps on the channel, within its
budget. Without a Redis page cache no other process shares the pages: one look."""

from __future__ import annotations

import time
from typing import Any

from django.core.cache import BaseCache
from django.core.cache.backends.redis import RedisCache

from edge.shared_cache import cache_get


def _client(store: BaseCache) -> Any:
    if not isinstance(store, RedisCache):
        return None
    return store._cache.get_client(write=True)


def _channel(store: BaseCache, key: str) -> str:
    return store.make_key(f"built:{key}")


def announce(key: str, *, store: BaseCache) -> None:
    """Tell the waiters of `key` (in any process) that it is in the cache now."""
    try:
        client = _client(store)
        if client is not None:
            client.publish(_channel(store, key), b"1")
    except Exception:  # noqa: BLE001, S110 - waiters fall back to their budget
        pass


def wait_for(key: str, *, store: BaseCache, timeout: float) -> Any:
    """The cached value of `key` once it is there, or None after `timeout` seconds."""
    try:
        client = _client(store)
    except Exception:  # noqa: BLE001
        client = None
    if client is None:
        return cache_get(key, store=store)
    try:
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(_channel(store, key))
    except Exception:  # noqa: BLE001 - Redis is away: one look, no wait
        return cache_get(key, store=store)
    try:
        deadline = time.monotonic() + timeout
        # Subscribed first, then looked: a page stored in between is not missed.
        value = cache_get(key, store=store)
        while value is None and (left := deadline - time.monotonic()) > 0:
            if pubsub.get_message(timeout=left) is not None:
                value = cache_get(key, store=store)
        return value
    except Exception:  # noqa: BLE001
        return cache_get(key, store=store)
    finally:
        pubsub.close()
