"""Isolation (issue 11): a page or feed entry that cannot be rendered degrades, and staff
see the error on the console's Now page and in the admin until it renders again."""

from __future__ import annotations

from typing import Any
from unittest import mock

import feedparser
import pytest
from django.db import connection
from django.test import Client, TestCase
from django.test.utils import CaptureQueriesContext

from edge import version
from edge.models import RenderProblem
from public_site import feeds
from public_site import views as public_views
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def _changed() -> None:
    """A write elsewhere: every public page is rebuilt on its next request."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        version.public_state_changed()


@pytest.fixture
def incidents() -> tuple[Any, Any]:
    gmail = make_product("Gmail")
    broken = make_incident(title="Router meltdown", product=gmail, end=utc(2026, 11, 30, 12))
    fine = make_incident(title="Spam filter hiccup", product=gmail, end=utc(2026, 11, 29, 12))
    return broken, fine


def _failing_for(public_id: str, real: Any) -> Any:
    def incident_page(**kwargs: Any) -> Any:
        if kwargs["public_id"] == public_id:
            raise RuntimeError("template blew up on this incident")
        return real(**kwargs)

    return incident_page


def test_it_records_a_page_that_cannot_be_rendered_shows_it_to_staff_and_clears_it(
    incidents: tuple[Any, Any], staff_client: Client
) -> None:
    broken, fine = incidents
    url = f"/incidents/{broken.public_id}/"
    public = Client()
    assert public.get(url).status_code == 200  # a good copy to fall back on
    real = public_views.public_selectors.incident_page
    with mock.patch.object(
        public_views.public_selectors, "incident_page", _failing_for(broken.public_id, real)
    ):
        for _ in range(3):
            _changed()
            response = public.get(url)
            assert response.status_code == 200
            assert b"Router meltdown" in response.content  # the last good copy, marked stale
            assert response["X-Status-Snapshot"] == "stale"
            # The other incident renders as usual and records nothing.
            assert public.get(f"/incidents/{fine.public_id}/").status_code == 200

    problem = RenderProblem.objects.get()
    assert (problem.kind, problem.label, problem.count) == (RenderProblem.Kind.PAGE, url, 3)
    assert problem.error == "RuntimeError: template blew up on this incident"
    assert problem.first_seen_at <= problem.last_seen_at

    now = staff_client.get("/manage/")
    assert now.status_code == 200
    assert b"Render problems" in now.content
    assert url.encode() in now.content and b"template blew up on this incident" in now.content
    assert b"3 times" in now.content
    admin = staff_client.get("/admin/edge/renderproblem/")
    assert admin.status_code == 200 and url.encode() in admin.content

    # Fixed: the next rebuild renders, and the problem is gone from the console.
    _changed()
    response = public.get(url)
    assert response.status_code == 200 and "X-Status-Snapshot" not in response
    assert not RenderProblem.objects.exists()
    assert b"Render problems" not in staff_client.get("/manage/").content


def test_it_records_a_feed_entry_that_cannot_be_rendered_and_clears_it(
    incidents: tuple[Any, Any], staff_client: Client
) -> None:
    broken, _fine = incidents
    real = feeds.HistoryRssFeed._description

    def flaky(self: Any, item: Any) -> str:
        if item.incident.pk == broken.pk:
            raise ValueError("bad stored HTML")
        return real(self, item)

    with mock.patch.object(feeds.HistoryRssFeed, "_description", flaky):
        for url in ("/history.rss", "/history.atom"):
            response = Client().get(url)
            assert response.status_code == 200, url
            parsed = feedparser.parse(response.content)
            assert not parsed.bozo and len(parsed.entries) == 2  # degraded to its title, not dropped

    problem = RenderProblem.objects.get()
    assert problem.kind == RenderProblem.Kind.FEED_ENTRY
    assert problem.key == broken.public_id and problem.count == 2
    assert problem.label == f"Router meltdown ({broken.public_id})"
    now = staff_client.get("/manage/").content
    assert b"Feed entry" in now and b"ValueError: bad stored HTML" in now

    _changed()
    assert Client().get("/history.rss").status_code == 200
    assert not RenderProblem.objects.exists()


def test_good_renders_cost_no_query_while_nothing_is_open(incidents: tuple[Any, Any]) -> None:
    broken, _fine = incidents
    url = f"/incidents/{broken.public_id}/"
    Client().get(url)
    _changed()
    with CaptureQueriesContext(connection) as queries:
        assert Client().get(url).status_code == 200
    assert not [q for q in queries.captured_queries if "edge_renderproblem" in q["sql"]]


def test_a_lost_marker_comes_back_when_staff_look(incidents: tuple[Any, Any], staff_client: Client) -> None:
    from django.core.cache import cache

    broken, _fine = incidents
    url = f"/incidents/{broken.public_id}/"
    Client().get(url)
    real = public_views.public_selectors.incident_page
    with mock.patch.object(
        public_views.public_selectors, "incident_page", _failing_for(broken.public_id, real)
    ):
        _changed()
        Client().get(url)
    assert RenderProblem.objects.count() == 1
    cache.clear()  # the cache server restarted: the "problems open" marker is gone
    staff_client.get("/manage/")  # listing the problem re-arms the marker
    _changed()
    Client().get(url)
    assert not RenderProblem.objects.exists()
