"""The console's header mark follows the public page's status, cheaply."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client, TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_incident, make_product

pytestmark = pytest.mark.django_db

MARK = re.compile(r'<svg class="brand__mark icon--([a-z_]+)"[^>]*><use href="#icon-([a-z_]+)">')


def _mark(html: str) -> tuple[str, str]:
    found = MARK.search(html)
    assert found is not None, "no brand mark in the page"
    return found.group(1), found.group(2)


def _public_mark(client: Client) -> tuple[str, str]:
    return _mark(Client().get("/").content.decode())


def test_it_is_a_check_only_when_all_is_well(staff_client: Client) -> None:
    make_product("Gmail")
    html = staff_client.get("/manage/").content.decode()
    assert _mark(html) == ("operational", "operational")
    assert "(public page: All Systems Operational)" in html


def test_it_shows_a_critical_incident_on_every_console_page(staff_client: Client) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(
        product=gmail,
        start=timezone.now(),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
        impact=Incident.Impact.CRITICAL,
    )
    for path in (
        "/manage/",
        f"/manage/incidents/{incident.public_id}/",
        f"/manage/incidents/{incident.public_id}/report/",
        "/manage/insights/",
    ):
        html = staff_client.get(path).content.decode()
        assert _mark(html) == ("major_outage", "major_outage"), path
        assert "(public page: Major System Outage)" in html, path
    # The same mark as the public page's header: one rollup for both.
    assert _public_mark(Client()) == ("major_outage", "major_outage")


def test_it_follows_the_public_page_not_drafts(staff_client: Client) -> None:
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=timezone.now(), impact=Incident.Impact.CRITICAL, is_public=False)
    assert _mark(staff_client.get("/manage/").content.decode()) == ("operational", "operational")


def test_it_reads_the_status_once_and_changes_with_the_next_public_write(staff_client: Client) -> None:
    gmail = make_product("Gmail")
    staff_client.get("/manage/templates/")  # the session's first request writes its activity stamp
    with CaptureQueriesContext(connection) as cached:
        html = staff_client.get("/manage/templates/").content.decode()
    assert _mark(html) == ("operational", "operational")
    cache.clear()
    with CaptureQueriesContext(connection) as uncached:
        staff_client.get("/manage/templates/")
    # Cached per public-state version: the rollup's three reads (public products, their
    # open windows, unresolved incidents) are made once, not on every page.
    assert len(uncached.captured_queries) - len(cached.captured_queries) == 3
    with TestCase.captureOnCommitCallbacks(execute=True):
        services.incident_open(
            title="Gmail degraded",
            impact=Incident.Impact.MINOR,
            started_at=timezone.now(),
            windows=[
                services.WindowSpec(
                    product=gmail, level=ImpactWindow.Level.DEGRADED_PERFORMANCE, started_at=timezone.now()
                )
            ],
        )
    html = staff_client.get("/manage/templates/").content.decode()
    assert _mark(html) == ("degraded_performance", "degraded_performance")


def test_it_reads_the_database_when_the_cache_is_away(staff_client: Client, monkeypatch: Any) -> None:
    from console import context_processors

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("cache down")

    monkeypatch.setattr(context_processors.shared_cache, "get", broken)
    monkeypatch.setattr(context_processors.shared_cache, "set", broken)
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=timezone.now(), impact=Incident.Impact.CRITICAL)
    assert _mark(staff_client.get("/manage/").content.decode()) == ("major_outage", "major_outage")
