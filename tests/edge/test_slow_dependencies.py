"""A slow or silent database and a paused or killed Redis never pin the page (issue 19).

Real PostgreSQL behind a loopback proxy that adds latency or stops answering (the shared
server itself is never touched), and a throwaway redis-server of our own that is paused
with SIGSTOP and killed. Budgets are short so the file stays fast.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connections
from django.test import Client

from edge import version as public_version
from incidents.models import ImpactWindow, Incident, Product
from tests.builders import make_incident, make_product, utc
from tests.conftest import service_missing
from tests.faults import FaultProxy, ThrowawayRedis
from tests.waiting import poll, wait_for

BUDGET = 0.3
# What "within budget" means on a loaded 2-core machine: the budget plus generous
# scheduling noise. Each bound comes with a positive signal (a stale marker, a 503 with
# Retry-After) showing the request did not wait, which here would cost seconds.
SLACK = 1.0


def _join_rebuilds() -> None:
    """Rebuilds still running in the background finish (or fail) before the next step."""
    for thread in threading.enumerate():
        if thread.name.startswith("rebuild:"):
            thread.join(timeout=10)


def _wait_for_other_sessions() -> None:
    """The server ends sessions whose sockets closed a moment later; the test database
    can only be flushed and dropped after that."""
    conn = connections["default"]
    if conn.vendor != "postgresql":
        return

    def alone() -> bool:
        with conn.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            (others,) = cursor.fetchone()
        return not others

    poll(alone, timeout=5, interval=0.1)
    conn.close()


@pytest.fixture(autouse=True)
def _settle(transactional_db: None) -> Iterator[None]:
    yield
    _join_rebuilds()
    _wait_for_other_sessions()


def _warm(client: Client, url: str) -> Any:
    """A first render may be answered 503 + Retry-After on a busy machine: retry, bounded."""
    last: list[Any] = []

    def rendered() -> bool:
        last[:] = [client.get(url)]
        return bool(last[0].status_code != 503)

    poll(rendered, timeout=10, interval=0.2)
    return last[0]


def _cached_version() -> Any:
    try:
        return cache.get(public_version.VERSION_KEY)
    except Exception:  # noqa: BLE001 - the breaker is still open
        return None


@pytest.fixture
def budgets(settings: Any) -> Any:
    settings.PUBLIC_RENDER_BUDGET = BUDGET
    settings.PUBLIC_FIRST_RENDER_BUDGET = 0.6
    settings.PUBLIC_REBUILD_TIMEOUT = 8.0
    settings.PUBLIC_CACHE_LOCK_TIMEOUT = 5
    settings.PUBLIC_CACHE_DB_BACKOFF = 0.5
    return settings


@pytest.fixture
def world(transactional_db: None) -> Incident:
    gmail = make_product("Gmail")
    make_product("Cloud Storage")
    return make_incident(
        title="Gmail web interface unavailable",
        product=gmail,
        start=utc(2026, 11, 20, 19, 45),
        end=utc(2026, 11, 20, 21, 15),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
    )


@pytest.fixture
def db_proxy(postgres: None, budgets: Any) -> Iterator[FaultProxy]:
    """Every connection (this thread's and the rebuild threads') goes through the proxy."""
    conn = connections["default"]
    shared = conn.settings_dict  # the one dict every thread's connection is made from
    saved = dict(shared)
    proxy = FaultProxy((str(saved["HOST"] or "127.0.0.1"), int(saved["PORT"] or 5432)))
    conn.close()
    shared["HOST"], shared["PORT"] = "127.0.0.1", str(proxy.port)
    budgets.DB_CLIENT_TIMEOUT_MS = 1500
    try:
        yield proxy
    finally:
        proxy.heal()
        budgets.DB_CLIENT_TIMEOUT_MS = 0  # the teardown's flush is no test of ours
        _join_rebuilds()
        proxy.close()
        conn.close()
        shared.update(saved)


def _timed(client: Client, url: str) -> tuple[Any, float]:
    started = time.monotonic()
    response = client.get(url)
    return response, time.monotonic() - started


def _assert_stale(response: Any, url: str) -> None:
    assert response.status_code == 200, url
    assert response["X-Status-Snapshot"] == "stale", url
    assert response["ETag"].startswith('W/"'), url
    assert response["Cache-Control"].startswith("public, max-age=5"), url
    assert "stale-while-revalidate" not in response["Cache-Control"], url
    assert int(response["Age"]) >= 0, url
    if response["Content-Type"].startswith("text/html"):
        assert b"Live data is temporarily unavailable" in response.content, url


PAGES = ["/", "/history/", "/products/gmail/", "/api/v2/summary.json", "/history.atom"]


def _pages(world: Incident) -> list[str]:
    return [*PAGES, f"/incidents/{world.public_id}/", "/api/v1/incidents/"]


def test_it_answers_within_budget_while_the_database_is_slow_and_rebuilds_once(
    world: Incident, db_proxy: FaultProxy, settings: Any
) -> None:
    from public_site import pages as public_selectors

    # Static files straight from the app's folders (no collectstatic in tests).
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True
    client = Client()
    urls = _pages(world)
    fresh = {url: _warm(client, url) for url in urls}
    assert all(r.status_code == 200 for r in fresh.values())

    renders: list[int] = []
    real = public_selectors.status_page

    def counting(**kwargs: Any) -> Any:
        renders.append(1)
        return real(**kwargs)

    public_version._bump()  # a change: every page must be rebuilt
    db_proxy.delay = 0.25  # ~0.5 s per query: each page takes seconds to build
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(public_selectors, "status_page", counting)
        for _ in range(3):
            for url in urls:
                response, took = _timed(client, url)
                assert took < BUDGET + SLACK, (url, took)
                _assert_stale(response, url)
                assert response["ETag"] != fresh[url].get("ETag"), url
        # A static file does not wait for anything.
        static, took = _timed(client, "/static/css/status.css")
        assert static.status_code == 200 and took < SLACK

        # The background rebuild finishes (once, not once per request) and is served fresh,
        # although the database is still slow.
        wait_for(lambda: "X-Status-Snapshot" not in client.get("/"), timeout=15)
    assert len(renders) == 1
    page = client.get("/")
    assert page["ETag"].startswith('"') and b"Live data is temporarily unavailable" not in page.content
    db_proxy.heal()
    wait_for(lambda: all("X-Status-Snapshot" not in client.get(u) for u in urls), timeout=15)


def test_it_never_holds_a_thread_when_the_database_stops_answering(
    world: Incident, db_proxy: FaultProxy, settings: Any
) -> None:
    settings.PUBLIC_CACHE_DB_BACKOFF = 3.0
    client = Client()
    urls = _pages(world)
    for url in urls:
        assert _warm(client, url).status_code == 200, url

    public_version._bump()
    db_proxy.frozen = True  # connections stay open, nothing comes back
    for url in urls:
        response, took = _timed(client, url)
        assert took < BUDGET + SLACK, (url, took)
        _assert_stale(response, url)
    # A page never rendered before has no older copy: a fast 503 + Retry-After.
    response, took = _timed(client, "/products/cloud-storage/")
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    assert took < 0.6 + SLACK

    # The stuck rebuilds give up client-side (DB_CLIENT_TIMEOUT_MS) and every page backs
    # off together: no request reaches the database, all answer at once.
    _join_rebuilds()
    reached = db_proxy.client_chunks
    for url in urls:
        response, took = _timed(client, url)
        assert took < BUDGET + SLACK, (url, took)
        _assert_stale(response, url)
    assert db_proxy.client_chunks == reached

    # The database answers again: everything recovers by itself.
    db_proxy.heal()
    db_proxy.drop_connections()
    wait_for(lambda: all("X-Status-Snapshot" not in client.get(u) for u in urls), timeout=15)
    assert client.get("/products/cloud-storage/").status_code == 200


def test_it_sheds_misses_under_overload_while_hits_are_served(
    world: Incident, db_proxy: FaultProxy, settings: Any
) -> None:
    settings.PUBLIC_MAX_REBUILDS = 1
    make_incident(title="January", product=Product.objects.get(slug="gmail"), start=utc(2026, 1, 5, 10))
    client = Client()
    assert _warm(client, "/").status_code == 200
    db_proxy.delay = 0.3
    months = [f"/history/?month=2026-{m:02d}" for m in range(1, 11)]
    results: list[tuple[str, int, float, str]] = []
    lock = threading.Lock()

    def get(url: str) -> None:
        response, took = _timed(Client(), url)
        with lock:
            results.append((url, response.status_code, took, response.get("Retry-After", "")))
        connections.close_all()

    threads = [threading.Thread(target=get, args=(url,)) for url in months]
    for t in threads:
        t.start()
    hits = [_timed(client, "/") for _ in range(10)]
    for t in threads:
        t.join(timeout=10)
    misses = [r for r in results if r[1] == 503]
    assert misses, results
    assert all(int(retry) > 0 and took < 0.6 + SLACK for _, _, took, retry in misses)
    assert all(r.status_code == 200 and took < SLACK for r, took in hits)


def test_it_makes_no_cache_entries_for_unknown_or_out_of_range_query_values(world: Incident) -> None:
    client = Client()
    for url in ("/", "/history/", "/products/gmail/", "/history/?month=2026-10"):
        assert _warm(client, url).status_code == 200
    keys_before = set(cache._cache)  # type: ignore[attr-defined]
    refused = [
        "/history/?month=zzz",
        "/history/?month=2999-01",  # the future
        "/history/?month=1999-01",  # before the archive's first month
        "/products/gmail/?page=abc",
        "/products/gmail/?page=999",  # past the last page
        "/products/gmail/?page=007",
    ]
    for url in refused:
        assert client.get(url).status_code == 404, url
    # Ignored: unknown parameters and the canonical value are the canonical page.
    for url in ("/?utm=1", "/history/?foo=bar", "/products/gmail/?page=1", "/history/?month="):
        response = _warm(client, url)
        assert response.status_code == 200, url
    new = {k for k in set(cache._cache) - keys_before if ":page:" in k}  # type: ignore[attr-defined]
    assert not [k for k in new if ":last" in k or "history" in k or "product" in k], new


REDIS_SOCKET_TIMEOUT = 0.1


def _median_time(client: Client, url: str, n: int = 30) -> float:
    timings = []
    for _ in range(n):
        response, took = _timed(client, url)
        assert response.status_code == 200
        timings.append(took)
    return sorted(timings)[n // 2]


@pytest.fixture
def own_redis(settings: Any, budgets: Any) -> Iterator[ThrowawayRedis]:
    try:
        server = ThrowawayRedis()
    except FileNotFoundError:
        service_missing("redis-server is not installed (apt-get install redis-server)")
    settings.CACHE_BREAKER_SECONDS = 1.0
    settings.PUBLIC_STATE_DB_POLL = 0.5
    settings.CACHES = {
        "default": {
            "BACKEND": "edge.cache_backend.ResilientRedisCache",
            "LOCATION": server.url,
            "OPTIONS": {
                "socket_connect_timeout": REDIS_SOCKET_TIMEOUT,
                "socket_timeout": REDIS_SOCKET_TIMEOUT,
            },
        }
    }
    try:
        yield server
    finally:
        server.stop()


def test_it_costs_milliseconds_when_redis_is_paused_and_shows_changes_from_the_database(
    world: Incident, own_redis: ThrowawayRedis, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client()
    for url in ("/", "/api/v2/summary.json"):
        assert _warm(client, url).status_code == 200
    healthy = _median_time(client, "/")  # the reference, measured in this run
    own_redis.pause()
    caplog.set_level(logging.INFO)
    try:
        first, took_first = _timed(client, "/")
        assert first.status_code == 200 and took_first < SLACK
        # A few ms, as with Redis up: far from a socket timeout per request.
        paused = _median_time(client, "/")
        assert paused < healthy + REDIS_SOCKET_TIMEOUT / 2, (paused, healthy)
        # A new incident shows within the poll interval, though every process would
        # otherwise keep its own idea of the version until Redis is back.
        make_incident(
            title="Calendar sync delayed",
            product=Product.objects.get(slug="gmail"),
            start=utc(2026, 11, 30, 8),
        )
        wait_for(lambda: b"Calendar sync delayed" in client.get("/").content, timeout=3)
        outage_logs = [r for r in caplog.records if r.name.startswith("edge.")]
        assert len([r for r in outage_logs if "unavailable" in r.getMessage()]) == 1, outage_logs
        assert not [r for r in caplog.records if r.exc_info], "no traceback per request"
    finally:
        own_redis.resume()
    # Back: the breaker closes by itself and the page is served from Redis again.
    wait_for(lambda: _cached_version() is not None, timeout=3)
    assert b"Calendar sync delayed" in client.get("/").content


def test_it_keeps_every_page_fast_when_redis_is_killed(
    world: Incident, own_redis: ThrowawayRedis, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client()
    urls = _pages(world)
    for url in urls:
        assert _warm(client, url).status_code == 200, url
    own_redis.kill()
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        for url in urls:
            response, took = _timed(client, url)
            assert response.status_code == 200, url
            assert took < SLACK, (url, took)
    make_incident(
        title="Drive uploads failing", product=Product.objects.get(slug="gmail"), start=utc(2026, 11, 30, 9)
    )
    wait_for(lambda: b"Drive uploads failing" in client.get("/").content, timeout=3)
    assert not [r for r in caplog.records if r.exc_info], "no traceback per request"
    own_redis.start()  # same port, empty
    wait_for(lambda: client.get("/").status_code == 200 and _cached_version() is not None, timeout=5)
    assert b"Drive uploads failing" in client.get("/").content
