"""The web's standards in the v1 API: RFC 9457 problem details with a request id, 413 for
big bodies, cursor pagination with RFC 8288 links that stays stable under inserts, the
IETF RateLimit headers, strict JSON types, and headers declared and exposed (CORS)."""

from __future__ import annotations

import base64
import json
import logging
import re
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import path

from edge.problems import RequestIdLogFilter
from incidents.models import Incident
from statuspage.urls import urlpatterns as app_urlpatterns
from tests.api.conftest import World
from tests.api.test_v1 import assert_error, post
from tests.builders import make_incident, utc

pytestmark = pytest.mark.django_db


def crash(request: HttpRequest) -> HttpResponse:
    logging.getLogger("tests.crash").warning("about to fail")
    raise RuntimeError("secret internals: SECRET_KEY=should-not-leak")


urlpatterns = [path("api/v1/t/crash/", crash), *app_urlpatterns]

INCIDENT: dict[str, Any] = {
    "title": "Gmail delivery delays",
    "impact": "major",
    "body": "We are investigating.",
    "started_at": "2026-11-29T10:00:00Z",
    "windows": [{"product": "gmail", "level": "major_outage", "started_at": "2026-11-29T10:00:00Z"}],
}


# --- Problem details --------------------------------------------------------------------------


def test_an_unknown_api_path_is_a_problem_document(anon: Client, world: World) -> None:
    body = assert_error(anon.get("/api/v1/no-such-thing/"), 404, "not_found")
    assert body["type"] == "about:blank" and body["title"] == "Not Found"
    assert body["instance"] == "/api/v1/no-such-thing/"
    # The deprecated `error` object is announced on every problem response.
    response = anon.get("/api/v1/no-such-thing/")
    assert response["Deprecation"].startswith("@") and response["Sunset"].endswith("GMT")


def test_a_wrong_method_is_a_problem_document(staff_api: Client, world: World) -> None:
    assert_error(staff_api.put("/api/v1/status/"), 405, "method_not_allowed")


def test_the_crud_resources_change_by_patch_only(staff_api: Client, world: World) -> None:
    # api.base.CrudViewSet: no PUT anywhere (before the object is even looked up), and action
    # items and credit notices, which the API never deletes, refuse DELETE.
    for resource in (
        "action-items/1", "alert-integrations/1", "alert-rules/1", "customers/1", "locations/x",
        "product-groups/1", "products/gmail", "sla-policies/1", "subscribers/1", "templates/1",
    ):  # fmt: skip
        refused = staff_api.put(f"/api/v1/{resource}/", "{}", content_type="application/json")
        assert_error(refused, 405, "method_not_allowed")
        assert "PUT" not in refused["Allow"] and "PATCH" in refused["Allow"]
    assert_error(staff_api.delete("/api/v1/action-items/1/"), 405, "method_not_allowed")
    assert_error(staff_api.delete("/api/v1/credit-notices/1/"), 405, "method_not_allowed")


def test_an_unacceptable_type_is_a_problem_document(anon: Client, world: World) -> None:
    assert_error(anon.get("/api/v1/status/", HTTP_ACCEPT="text/html"), 406, "not_acceptable")


def test_accepting_only_problem_json_is_served(anon: Client, world: World) -> None:
    ok = anon.get("/api/v1/status/", HTTP_ACCEPT="application/problem+json")
    assert ok.status_code == 200, ok.content
    missing = anon.get("/api/v1/incidents/nope/", HTTP_ACCEPT="application/problem+json")
    assert_error(missing, 404, "not_found")


def test_a_validation_error_names_the_fields(staff_api: Client, world: World) -> None:
    body = assert_error(post(staff_api, "/api/v1/incidents/", {**INCIDENT, "windows": [{}]}), 400, "invalid")
    assert {"windows.0.product", "windows.0.level"} <= set(body["errors"])
    assert body["title"] == "Bad Request" and body["status"] == 400


@pytest.mark.urls("tests.api.test_standards")
@pytest.mark.parametrize("debug", [False, True])
def test_a_crash_is_a_problem_document_even_with_debug(
    settings: Any, caplog: pytest.LogCaptureFixture, debug: bool
) -> None:
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.WARNING):
        response = client.get("/api/v1/t/crash/", HTTP_X_REQUEST_ID="trace-abc.123")
    body = assert_error(response, 500, "server_error")
    assert b"SECRET_KEY" not in response.content and b"<html" not in response.content.lower()
    assert body["request_id"] == "trace-abc.123"
    # The log records of the request carry its id (the filter the LOGGING handler uses).
    records = [r for r in caplog.records if r.name in ("tests.crash", "api.exceptions")]
    assert records
    for record in records:
        RequestIdLogFilter().filter(record)
        assert record.__dict__["request_id"] == "trace-abc.123"


def test_a_crash_inside_a_drf_view_with_debug_is_json(staff_api: Client, world: World, settings: Any) -> None:
    settings.DEBUG = True
    client = Client(
        raise_request_exception=False, HTTP_AUTHORIZATION=staff_api.defaults["HTTP_AUTHORIZATION"]
    )
    with mock.patch("api.action_items.order_by", side_effect=RuntimeError("boom")):
        response = client.get("/api/v1/action-items/")
    assert_error(response, 500, "server_error")


def test_every_response_has_a_request_id(anon: Client, world: World) -> None:
    generated = anon.get("/api/v1/status/")["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert anon.get("/api/v1/status/", HTTP_X_REQUEST_ID="edge-42")["X-Request-ID"] == "edge-42"
    # An id that could forge a log line or is too long is replaced, never echoed.
    for bad in ("a b", "x" * 200, "evil\tline", "<script>"):
        assert anon.get("/api/v1/status/", HTTP_X_REQUEST_ID=bad)["X-Request-ID"] != bad
    assert anon.get("/")["X-Request-ID"]


def test_a_body_over_the_limit_is_413(staff_api: Client, world: World, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = {**INCIDENT, "body": "x" * 2000}
    before = Incident.objects.count()
    assert_error(post(staff_api, "/api/v1/incidents/", big), 413, "payload_too_large")
    # With an Idempotency-Key the body is read for its fingerprint first: still a 413.
    keyed = staff_api.post(
        "/api/v1/incidents/",
        data=json.dumps(big),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k-413",
    )
    assert_error(keyed, 413, "payload_too_large")
    assert Incident.objects.count() == before
    assert post(staff_api, "/api/v1/incidents/", INCIDENT).status_code == 201


# --- Strict types ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"title": 123}, "title"),
        ({"body": ["a"]}, "body"),
        ({"is_public": "false"}, "is_public"),
        ({"notify": 0}, "notify"),
        ({"started_at": "2026-11-29T10:00:00"}, "started_at"),
        ({"started_at": 1764410400}, "started_at"),
        ({"windows": [{**INCIDENT["windows"][0], "started_at": "2026-11-29T10:00"}]}, "windows.0.started_at"),
    ],
)
def test_wrong_json_types_are_400_naming_the_field(
    staff_api: Client, world: World, change: dict[str, Any], field: str
) -> None:
    before = Incident.objects.count()
    body = assert_error(post(staff_api, "/api/v1/incidents/", {**INCIDENT, **change}), 400, "invalid")
    assert field in body["errors"], body
    assert Incident.objects.count() == before


def test_right_json_types_are_taken(staff_api: Client, world: World) -> None:
    response = post(
        staff_api,
        "/api/v1/incidents/",
        {**INCIDENT, "is_public": False, "started_at": "2026-11-29T12:00:00+02:00"},
    )
    assert response.status_code == 201, response.content
    incident = Incident.objects.get(public_id=response.json()["id"])
    assert incident.is_public is False
    assert incident.started_at == utc(2026, 11, 29, 10, 0)


# --- Cursor pagination -------------------------------------------------------------------------


def _page_ids(client: Client, url: str) -> tuple[list[str], Any]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]], response


def test_paging_is_stable_while_rows_are_inserted(staff_api: Client, world: World) -> None:
    for day in range(1, 6):
        make_incident(
            title=f"Older {day}", product=world.gmail, start=utc(2020, 1, day), end=utc(2020, 1, day, 1)
        )
    expected = [row["id"] for row in staff_api.get("/api/v1/incidents/?page_size=200").json()["results"]]
    seen: list[str] = []
    ids, response = _page_ids(staff_api, "/api/v1/incidents/?page_size=3")
    seen += ids
    while response.json()["next"]:
        # A new incident (newest first: it goes on the first page) between every two pages.
        make_incident(title="Inserted meanwhile", product=world.gmail, start=utc(2026, 12, 1))
        ids, response = _page_ids(staff_api, response.json()["next"])
        seen += ids
    assert seen == expected  # no duplicate, nothing skipped


def test_pages_link_both_ways_in_the_body_and_the_link_header(anon: Client, world: World) -> None:
    ids, first = _page_ids(anon, "/api/v1/incidents/?page_size=1&ordering=resolved_at")
    assert first.json()["previous"] is None
    assert 'rel="prev"' not in first.get("Link", "")
    links = {rel: url for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', first["Link"])}
    assert links["next"] == first.json()["next"]
    middle_ids, middle = _page_ids(anon, links["next"])
    assert middle_ids != ids
    back_ids, _ = _page_ids(anon, middle.json()["previous"])
    assert back_ids == ids
    # Following `next` to the end reaches every incident once, nulls included.
    seen = ids + middle_ids
    response = middle
    while response.json()["next"]:
        more, response = _page_ids(anon, response.json()["next"])
        seen += more
    assert 'rel="next"' not in response.get("Link", "")
    everything = [row["id"] for row in anon.get("/api/v1/incidents/?ordering=resolved_at").json()["results"]]
    assert seen == everything and len(set(seen)) == len(seen)


def test_a_first_page_holding_the_whole_list_is_counted_without_a_count_query(
    staff_api: Client, world: World
) -> None:
    def listing(url: str) -> tuple[dict[str, Any], list[str]]:
        with CaptureQueriesContext(connection) as queries:
            response = staff_api.get(url)
        assert response.status_code == 200, response.content
        return response.json(), [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]

    whole, counts = listing("/api/v1/incidents/?page_size=200")
    assert counts == [] and whole["next"] is None
    assert whole["count"] == len(whole["results"]) == Incident.objects.filter(kind="incident").count() > 1
    # A list that goes on past its first page still counts all of it, once.
    first, counts = listing("/api/v1/incidents/?page_size=1")
    assert len(counts) == 1 and first["count"] == whole["count"] and len(first["results"]) == 1
    last, counts = listing(first["next"].replace("page_size=1", "page_size=200"))
    assert len(counts) == 1 and last["count"] == whole["count"] and last["next"] is None


def test_a_page_memoised_for_anonymous_callers_keeps_its_link_header(anon: Client, world: World) -> None:
    first, again = (anon.get("/api/v1/incidents/?page_size=1") for _ in range(2))
    assert first["Link"] == again["Link"] == f'<{again.json()["next"]}>; rel="next"'


def test_a_tampered_cursor_is_400_naming_it(anon: Client, world: World) -> None:
    _, first = _page_ids(anon, "/api/v1/incidents/?page_size=1")
    token = re.search(r"cursor=([^&]+)", first.json()["next"])
    assert token
    forged = base64.urlsafe_b64encode(json.dumps({"k": ["not a date", 1], "b": False}).encode()).decode()
    for cursor in (forged, token[1][:-3], "%00"):
        body = assert_error(anon.get(f"/api/v1/incidents/?page_size=1&cursor={cursor}"), 400, "invalid")
        assert "cursor" in body["errors"]


# --- Rate limits, headers in the schema, CORS --------------------------------------------------


def test_a_429_carries_retry_after_and_the_ratelimit_headers(world: World, settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "2/min", "token": "9/min"},
    }
    client = Client(REMOTE_ADDR="203.0.113.77")
    for _ in range(2):
        assert client.get("/api/v1/status/").status_code == 200
    refused = client.get("/api/v1/status/")
    assert_error(refused, 429, "throttled")
    assert int(refused["Retry-After"]) >= 1
    assert refused["RateLimit-Policy"] == '"anon";q=2;w=60'
    assert re.fullmatch(r'"anon";r=0;t=\d+', refused["RateLimit"])


def test_cors_exposes_the_headers_clients_need(anon: Client, world: World) -> None:
    response = anon.get("/api/v1/incidents/?page_size=1", HTTP_ORIGIN="https://widget.example.com")
    exposed = {name.strip().lower() for name in response["Access-Control-Expose-Headers"].split(",")}
    assert {
        "etag",
        "link",
        "ratelimit",
        "ratelimit-policy",
        "retry-after",
        "x-request-id",
        "location",
    } <= exposed


def test_the_schema_declares_the_response_headers(anon: Client) -> None:
    schema = anon.get("/api/schema/?format=json").json()
    assert {
        "X-Request-ID",
        "RateLimit",
        "RateLimit-Policy",
        "Retry-After",
        "Location",
        "ETag",
        "Link",
    } <= set(schema["components"]["headers"])

    def headers(path: str, method: str, code: str) -> set[str]:
        return set(schema["paths"][path][method]["responses"][code].get("headers", {}))

    assert {"Link", "RateLimit", "X-Request-ID"} <= headers("/api/v1/incidents/", "get", "200")
    assert {"Location", "Idempotent-Replayed"} <= headers("/api/v1/incidents/", "post", "201")
    assert "Retry-After" in headers("/api/v1/incidents/", "post", "429")
    assert "ETag" in headers("/api/v1/incidents/{public_id}/", "get", "200")
    assert "ETag" in headers("/api/v1/incidents/{public_id}/", "patch", "200")
    listing = schema["paths"]["/api/v1/incidents/"]["get"]
    assert {"cursor", "page_size"} <= {p["name"] for p in listing["parameters"]}
    assert "page" not in {p["name"] for p in listing["parameters"]}
