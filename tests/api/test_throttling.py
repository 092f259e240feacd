"""Throttling: 429 with Retry-After, keyed on the real client address, failing open."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest
from django.core.cache import caches
from django.test import Client

from api.throttling import client_address
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

URL = "/api/v1/status/"


@pytest.fixture
def low_limits(settings: Any) -> Any:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/min", "token": "4/min"},
    }
    return settings


def hit(client: Client, n: int, url: str = URL, **headers: Any) -> list[int]:
    return [client.get(url, **headers).status_code for _ in range(n)]


def test_it_throttles_anonymous_callers_with_429_and_retry_after(
    anon: Client, world: World, low_limits: Any
) -> None:
    assert hit(anon, 3) == [200, 200, 200]
    response = anon.get(URL)
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response.json()["code"] == "throttled"
    assert "Cache-Control" not in response.headers or "public" not in response["Cache-Control"]
    # Another address has its own allowance.
    assert anon.get(URL, REMOTE_ADDR="198.51.100.7").status_code == 200


def test_it_ignores_forged_forwarded_for_without_trusted_proxies(
    anon: Client, world: World, low_limits: Any
) -> None:
    codes = [anon.get(URL, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code for i in range(5)]
    assert codes == [200, 200, 200, 429, 429]


def test_it_keys_on_the_entry_our_proxy_appended(anon: Client, world: World, low_limits: Any) -> None:
    low_limits.NUM_PROXIES = 1
    # The client forges the left part; our proxy appends the address it really saw.
    codes = [
        anon.get(URL, HTTP_X_FORWARDED_FOR=f"10.0.0.{i}, 192.0.2.10", REMOTE_ADDR="10.1.1.1").status_code
        for i in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]
    other = anon.get(URL, HTTP_X_FORWARDED_FOR="192.0.2.11", REMOTE_ADDR="10.1.1.1")
    assert other.status_code == 200


def test_it_picks_the_client_address() -> None:
    class Request:
        def __init__(self, **meta: str) -> None:
            self.META = meta

    from django.test import override_settings

    with override_settings(NUM_PROXIES=0):
        assert client_address(Request(REMOTE_ADDR="1.2.3.4", HTTP_X_FORWARDED_FOR="9.9.9.9")) == "1.2.3.4"  # type: ignore[arg-type]
    with override_settings(NUM_PROXIES=2):
        request = Request(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 5.5.5.5, 10.0.0.2")
        assert client_address(request) == "5.5.5.5"  # type: ignore[arg-type]
        garbage = Request(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="not-an-ip, 10.0.0.2")
        assert client_address(garbage) == "10.0.0.1"  # type: ignore[arg-type]


def test_it_throttles_token_callers_per_user(
    user_api: Client, staff_api: Client, world: World, low_limits: Any
) -> None:
    assert hit(user_api, 4, "/api/v1/products/") == [200] * 4
    assert user_api.get("/api/v1/products/", REMOTE_ADDR="198.51.100.9").status_code == 429
    assert staff_api.get("/api/v1/products/").status_code == 200


def test_it_fails_open_when_the_cache_is_down(anon: Client, world: World, low_limits: Any) -> None:
    # Nothing listens on port 1: every cache call fails at once.
    down = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
    }
    low_limits.CACHES = {"default": down, "ratelimit": down}
    assert hit(anon, 5) == [200] * 5
    assert hit(anon, 2, "/api/v1/incidents/") == [200, 200]


def test_it_throttles_through_real_redis(anon: Client, world: World, low_limits: Any, redis_url: str) -> None:
    parsed = urlparse(redis_url)
    location = f"redis://{parsed.hostname}:{parsed.port or 6379}/12"
    redis_cache = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}
    low_limits.CACHES = {"default": redis_cache, "ratelimit": {**redis_cache, "KEY_PREFIX": "rl"}}
    caches["ratelimit"].clear()
    try:
        assert hit(anon, 4) == [200, 200, 200, 429]
    finally:
        caches["ratelimit"].clear()
