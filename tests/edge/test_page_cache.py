"""The versioned public cache: one rebuild per change, 304s, snapshots, cache outages."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from edge import page_cache
from edge import version as public_cache

rf = RequestFactory()


class CountingView:
    """A view that counts its renders and can be made slow or failing."""

    def __init__(self, *, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay
        self.fail = False
        self.lock = threading.Lock()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with self.lock:
            self.calls += 1
        if self.fail:
            raise OperationalError("could not connect to server")
        time.sleep(self.delay)
        return HttpResponse(f"<html><body><!--snapshot-notice--><p>render {self.calls}</p></body></html>")


@pytest.fixture(autouse=True)
def _snapshots(settings, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path


def _bump() -> None:
    # What a service does after its commit.
    public_cache._bump()


def test_it_serves_repeat_requests_from_cache() -> None:
    view = CountingView()
    wrapped = page_cache.public_page("test-page")(view)
    first = wrapped(rf.get("/"))
    second = wrapped(rf.get("/"))
    assert first.status_code == second.status_code == 200
    assert view.calls == 1
    assert first.content == second.content


def test_it_rebuilds_after_a_change_without_waiting_for_a_ttl() -> None:
    view = CountingView()
    wrapped = page_cache.public_page("test-page")(view)
    before = wrapped(rf.get("/"))
    _bump()
    after = wrapped(rf.get("/"))
    assert view.calls == 2
    assert before["ETag"] != after["ETag"]


def test_it_rebuilds_once_for_many_concurrent_requests_after_a_change() -> None:
    view = CountingView(delay=0.3)
    wrapped = page_cache.public_page("test-herd")(view)
    wrapped(rf.get("/"))
    _bump()
    results: list[int] = []

    def hit() -> None:
        results.append(wrapped(rf.get("/")).status_code)

    threads = [threading.Thread(target=hit) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 20
    assert view.calls == 2  # the first render, and exactly one rebuild for the change


def test_it_answers_conditional_requests_with_304_and_an_empty_body() -> None:
    wrapped = page_cache.public_page("test-304")(CountingView())
    first = wrapped(rf.get("/"))
    etag = first["ETag"]
    again = wrapped(rf.get("/", HTTP_IF_NONE_MATCH=etag))
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    since = wrapped(rf.get("/", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"]))
    assert since.status_code == 304


def test_it_sets_public_caching_headers_and_no_cookie() -> None:
    response = page_cache.public_page("test-headers")(CountingView())(rf.get("/"))
    cache_control = response["Cache-Control"]
    assert "public" in cache_control
    assert "max-age=" in cache_control
    assert "stale-while-revalidate=" in cache_control
    assert "stale-if-error=" in cache_control
    assert "Set-Cookie" not in response
    assert not response.cookies


def test_it_serves_the_snapshot_marked_stale_when_the_database_fails(tmp_path: Path) -> None:
    view = CountingView()
    wrapped = page_cache.public_page("index")(view)
    good = wrapped(rf.get("/"))
    # The file nginx serves when the app is down carries the visible notice in place of
    # the marker (the app cannot fill it in then).
    on_disk = (tmp_path / "snapshots" / "index.html").read_bytes()
    assert page_cache.SNAPSHOT_MARKER not in on_disk
    assert b"This page may be out of date." in on_disk
    assert on_disk.replace(b"<!--", b"").count(b"snapshot-notice") == 1
    assert good.content.split(page_cache.SNAPSHOT_MARKER)[1] in on_disk
    _bump()
    view.fail = True
    stale = wrapped(rf.get("/"))
    assert stale.status_code == 200
    assert stale["X-Status-Snapshot"] == "stale"
    assert int(stale["Age"]) >= 0
    assert b"Live data is temporarily unavailable" in stale.content
    assert b"render 1" in stale.content


def test_it_lets_the_database_error_through_when_there_is_no_snapshot() -> None:
    view = CountingView()
    view.fail = True
    wrapped = page_cache.public_page("history-not-snapshotted")(view)
    with pytest.raises(OperationalError):
        wrapped(rf.get("/history/"))


def test_it_keeps_serving_when_the_cache_server_is_down(settings) -> None:
    # Port 1 on loopback: nothing listens, every cache call fails fast.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    # (pytest-django's settings fixture resets the cache handler on CACHES changes.)
    view = CountingView()
    wrapped = page_cache.public_page("test-redis-down")(view)
    first = wrapped(rf.get("/"))
    second = wrapped(rf.get("/"))
    assert first.status_code == second.status_code == 200
    # The per-process fallback still spares the database a render per request.
    assert view.calls == 1
    # Writers are not hurt either: bumping the version swallows the outage, and the
    # writer's own process sees its change (other processes read the database row).
    before = public_cache.public_state_version()
    public_cache._bump()
    assert public_cache.public_state_version() not in (before, "unavailable")


def test_it_serves_hits_from_the_process_memo_without_fetching_the_body_again() -> None:
    from unittest import mock

    from django.core.cache import cache

    view = CountingView()
    wrapped = page_cache.public_page("test-memo")(view)
    wrapped(rf.get("/"))
    with mock.patch.object(cache, "get", wraps=cache.get) as get:
        assert wrapped(rf.get("/")).status_code == 200
    fetched = [call.args[0] for call in get.call_args_list]
    # Only the (small) version stamp is read from the shared cache; the page is local.
    assert fetched == [public_cache.VERSION_KEY]
    assert view.calls == 1
    # A change still shows at once: the new version misses the memo.
    _bump()
    wrapped(rf.get("/"))
    assert view.calls == 2
