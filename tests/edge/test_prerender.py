"""Never a 503 for a cheap first render (issue 30): concurrent first requests for a cheap
page share one render instead of being shed, expensive misses are still shed, and the
pages are rendered ahead of visitors after a deploy and after each change."""

from __future__ import annotations

import threading
import time
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from freezegun import freeze_time

from edge import page_cache, prerender
from edge import version as public_version
from edge.page_cache import Prerendered
from edge.slots import rebuilds
from incidents import services
from incidents.models import Incident
from tests.builders import make_incident, make_product, utc

rf = RequestFactory()


class SlowView:
    def __init__(self, delay: float = 0.3) -> None:
        self.calls = 0
        self.delay = delay
        self.lock = threading.Lock()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with self.lock:
            self.calls += 1
        time.sleep(self.delay)
        return HttpResponse(f"render {self.calls}")


def _herd(wrapped: Any, url: str, n: int = 20) -> list[int]:
    statuses: list[int] = []
    lock = threading.Lock()

    def get() -> None:
        status = wrapped(rf.get(url)).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=get) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    return statuses


@pytest.fixture
def slots_taken(settings: Any) -> Any:
    """Every rebuild slot of this process is busy (expensive renders under way)."""
    settings.PUBLIC_MAX_REBUILDS = 1
    assert rebuilds.take()
    yield
    rebuilds.release()


def test_it_renders_a_cheap_first_page_once_for_a_herd_and_never_sheds_it(slots_taken: None) -> None:
    view = SlowView()
    wrapped = page_cache.public_page("test-cheap", cheap=True)(view)

    assert _herd(wrapped, "/") == [200] * 20
    assert view.calls == 1  # one render; the other 19 waited for it


def test_it_still_sheds_expensive_first_renders_when_the_slots_are_taken(slots_taken: None) -> None:
    view = SlowView()
    wrapped = page_cache.public_page("test-expensive")(view)

    statuses = _herd(wrapped, "/")

    assert statuses == [503] * 20
    assert view.calls == 0


def test_it_treats_the_query_variants_of_a_cheap_page_as_expensive(slots_taken: None) -> None:
    view = SlowView()
    wrapped = page_cache.public_page("test-cheap-pages", vary_on_query={"page": lambda v: v}, cheap=True)(
        view
    )

    assert wrapped(rf.get("/?page=7")).status_code == 503
    assert wrapped(rf.get("/")).status_code == 200


def test_requests_during_a_prerender_wait_for_it(settings: Any) -> None:
    settings.PUBLIC_MAX_REBUILDS = 0  # no request may render: only the prerender does
    view = SlowView(delay=0.5)
    wrapped: Any = page_cache.public_page("test-prerendered", cheap=False)(view)
    outcome: list[Prerendered] = []
    worker = threading.Thread(target=lambda: outcome.append(wrapped.prerender(rf.get("/"))))
    worker.start()
    time.sleep(0.1)

    statuses = _herd(wrapped, "/", n=10)
    worker.join(timeout=10)

    assert outcome == [Prerendered.RENDERED]
    assert statuses == [200] * 10
    assert view.calls == 1
    assert wrapped.prerender(rf.get("/")) is Prerendered.CACHED


# --- The real pages -----------------------------------------------------------------------------


@pytest.fixture
def world(db: None) -> Incident:
    gmail = make_product("Gmail")
    make_product("Cloud Storage", position=1)
    make_product("Hidden", is_public=False)
    return make_incident(
        title="Gmail web interface unavailable", product=gmail, start=utc(2026, 11, 20, 19, 45)
    )


EXPECTED = [
    "/",
    "/fr/",
    "/badge.svg",
    "/products/gmail/badge.svg",
    "/products/cloud-storage/badge.svg",
    "/products/gmail/",
    "/fr/products/gmail/",
    "/products/cloud-storage/",
    "/fr/products/cloud-storage/",
]


def test_it_prerenders_home_and_badges_first_then_product_pages(world: Incident) -> None:
    assert prerender.paths() == EXPECTED


def test_prerendered_pages_are_served_without_a_render(
    world: Incident, django_assert_num_queries: Any
) -> None:
    report = prerender.prerender_all()

    assert report.counts == {"rendered": len(EXPECTED)} and not report.failed and not report.stopped
    client = Client()
    for path in EXPECTED:
        with django_assert_num_queries(0):
            response = client.get(path)
        assert response.status_code == 200, path
    assert prerender.prerender_all().counts == {"cached": len(EXPECTED)}


@freeze_time(utc(2026, 11, 29, 20, 0))
@pytest.mark.parametrize("path", ["/", "/fr/products/gmail/", "/products/gmail/badge.svg"])
def test_a_prerendered_page_is_the_page_a_visitor_would_get(world: Incident, path: str) -> None:
    assert prerender.prerender_path(path) is Prerendered.RENDERED
    prerendered = Client().get(path)
    page_cache._memo.clear()
    page_cache._memo_last.clear()
    from django.core.cache import cache

    cache.clear()
    rendered = Client().get(path)

    assert prerendered.content == rendered.content
    assert prerendered["ETag"] == rendered["ETag"]


def test_it_stops_when_the_public_state_changed_again(world: Incident) -> None:
    outdated = public_version.public_state_version()
    public_version._bump()

    report = prerender.prerender_all(version=outdated)

    assert report.stopped and report.counts == {}


def test_a_public_change_prerenders_the_pages_under_the_new_version(
    world: Incident, settings: Any, django_capture_on_commit_callbacks: Any, django_assert_num_queries: Any
) -> None:
    settings.PUBLIC_PRERENDER_ON_CHANGE = True
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_resolve(incident=world, body="Recovered.")

    # Rendered in this thread here (a test's transaction); a thread or a task otherwise.
    with django_assert_num_queries(0):
        page = Client().get("/products/gmail/badge.svg")
    assert page.status_code == 200 and b"Operational" in page.content


def test_with_a_worker_a_change_queues_one_task_for_its_version(settings: Any) -> None:
    settings.PUBLIC_PRERENDER_ON_CHANGE = True
    settings.CELERY_TASK_ALWAYS_EAGER = False
    with mock.patch("edge.tasks.prerender_pages.delay") as delay:
        public_version._bump()

    delay.assert_called_once_with(public_version.public_state_version())


def test_the_command_prerenders_and_says_what_it_did(world: Incident, capsys: Any) -> None:
    call_command("prerender_pages")

    out = capsys.readouterr().out
    assert f"{len(EXPECTED)} rendered" in out


def test_renders_failing_on_one_outage_back_off_once(settings: Any) -> None:
    from edge.backoff import database

    settings.PUBLIC_CACHE_DB_BACKOFF = 60.0
    for _ in range(6):  # the renders under way when the database went away
        database.note_down()

    # One failure, not six: the backoff did not double (a probe's failure would).
    assert database._failures == 1


def test_without_a_worker_a_change_is_prerendered_by_a_thread_of_the_process(
    postgres: None, transactional_db: None, settings: Any
) -> None:
    from django.core.cache import cache

    from tests.waiting import wait_for

    make_product("Gmail")
    settings.PUBLIC_PRERENDER_ON_CHANGE = True
    settings.CELERY_TASK_ALWAYS_EAGER = True

    public_version._bump()  # after a commit, outside any transaction: the thread renders

    version = public_version.public_state_version()
    wait_for(lambda: cache.get(f"page:badge:{version}") is not None, timeout=30)
    wait_for(lambda: prerender._runner is None, timeout=30)
    assert prerender.prerender_all(version=version).counts == {
        "cached": 6
    }  # home and product page in 2 languages, 2 badges
