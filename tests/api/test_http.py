"""HTTP behaviour of public reads: validators, 304, Cache-Control, no cookies, CORS, outages."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client, TestCase
from django.utils.http import http_date

from edge import version as public_cache
from tests.api.conftest import World
from tests.public_urls import API_READS

pytestmark = pytest.mark.django_db

PUBLIC_READS = API_READS


def staff_write(client: Client, url: str, payload: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data=json.dumps(payload), content_type="application/json")


@pytest.mark.parametrize("url", PUBLIC_READS)
def test_it_sends_cache_validators_and_no_cookies(anon: Client, world: World, url: str) -> None:
    response = anon.get(url)
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
    assert response["ETag"].startswith('"') and response["ETag"].endswith('"')
    assert response["Last-Modified"]
    assert "Set-Cookie" not in response.headers
    assert not response.cookies
    assert "cookie" not in response.headers.get("Vary", "").lower()


@pytest.mark.parametrize("url", PUBLIC_READS)
def test_it_answers_conditional_gets_with_an_empty_304(anon: Client, world: World, url: str) -> None:
    first = anon.get(url)
    etag, last_modified = first["ETag"], first["Last-Modified"]
    again = anon.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    assert anon.get(url, HTTP_IF_NONE_MATCH=f'W/{etag}, "other"').status_code == 304
    assert anon.get(url, HTTP_IF_MODIFIED_SINCE=last_modified).status_code == 304
    assert anon.get(url, HTTP_IF_MODIFIED_SINCE=http_date(0)).status_code == 200
    assert anon.get(url, HTTP_IF_NONE_MATCH='"stale"').status_code == 200
    # If-None-Match wins over If-Modified-Since.
    assert (
        anon.get(url, HTTP_IF_NONE_MATCH='"stale"', HTTP_IF_MODIFIED_SINCE=last_modified).status_code == 200
    )


def test_it_changes_the_etag_after_an_update_through_the_api(
    anon: Client, staff_api: Client, world: World
) -> None:
    first = anon.get("/api/v2/summary.json")
    etag = first["ETag"]
    assert anon.get("/api/v2/summary.json", HTTP_IF_NONE_MATCH=etag).status_code == 304
    response = staff_write(
        staff_api,
        f"/api/v1/incidents/{world.ongoing.public_id}/updates/",
        {"status": "identified", "body": "Found the bad disk pool."},
    )
    assert response.status_code == 201
    after = anon.get("/api/v2/summary.json", HTTP_IF_NONE_MATCH=etag)
    assert after.status_code == 200
    assert after["ETag"] != etag
    assert after.json()["incidents"][0]["status"] == "identified"
    assert "Found the bad disk pool." in after.content.decode()


def test_it_marks_authenticated_reads_private(staff_api: Client, world: World) -> None:
    response = staff_api.get("/api/v1/incidents/")
    assert response["Cache-Control"] == "private, no-cache"
    assert "Authorization" in response["Vary"]
    assert staff_api.get("/api/v1/incidents/", HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304


def test_it_does_not_share_staff_data_through_the_memo(anon: Client, staff_api: Client, world: World) -> None:
    assert world.hidden.public_id in staff_api.get("/api/v1/incidents/").content.decode()
    assert world.hidden.public_id not in anon.get("/api/v1/incidents/").content.decode()
    assert world.hidden.public_id in staff_api.get("/api/v1/incidents/").content.decode()


@pytest.mark.parametrize(
    "url", ["/api/v2/summary.json", "/incidents.json", "/api/v1/incidents/", "/api/v1/status/"]
)
def test_it_sends_cors_headers_on_public_endpoints(anon: Client, world: World, url: str) -> None:
    response = anon.get(url, HTTP_ORIGIN="https://widget.example.com")
    assert response["Access-Control-Allow-Origin"] == "*"
    preflight = anon.options(
        url, HTTP_ORIGIN="https://widget.example.com", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET"
    )
    assert preflight["Access-Control-Allow-Origin"] == "*"
    assert "GET" in preflight["Access-Control-Allow-Methods"]


def test_it_sends_no_cors_headers_on_staff_resources(staff_api: Client, world: World) -> None:
    response = staff_api.get("/api/v1/action-items/", HTTP_ORIGIN="https://widget.example.com")
    assert response.status_code == 200
    assert "Access-Control-Allow-Origin" not in response.headers


def test_it_serves_the_last_snapshot_when_the_database_is_down(anon: Client, world: World) -> None:
    good = anon.get("/api/v2/summary.json")
    assert good.status_code == 200
    # A change the app cannot render any more: the cached copy is outdated, the build fails.
    public_cache._bump()
    with mock.patch("api.statuspage_v2.build_components", side_effect=OperationalError("db down")):
        stale = anon.get("/api/v2/summary.json")
    assert stale.status_code == 200
    assert stale.json() == good.json()
    assert stale["X-Status-Snapshot"] == "stale"
    assert int(stale["Age"]) >= 0


def test_it_answers_503_with_retry_after_when_the_database_is_down(anon: Client, world: World) -> None:
    with mock.patch("incidents.selectors.products_public", side_effect=OperationalError("db down")):
        response = anon.get("/api/v1/status/")
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert response.json()["code"] == "unavailable"
    with mock.patch("api.statuspage_v2.build_components", side_effect=OperationalError("db down")):
        # No snapshot was ever taken for this URL: 503, not a traceback.
        assert anon.get("/api/v2/components.json").status_code == 503
