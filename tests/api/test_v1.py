"""The v1 API: shapes, visibility, filters, the auth matrix of every write, and effects."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport, IncidentUpdate
from tests.api.conftest import World
from tests.api.keys import key_for
from tests.builders import approve_report, utc

pytestmark = pytest.mark.django_db


def post(client: Client, url: str, payload: dict[str, Any], method: str = "post") -> Any:
    # The test transaction never commits: run the service's on-commit hooks (the public
    # state version bump) as a real commit would.
    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(client, method)(url, data=json.dumps(payload), content_type="application/json")


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    # RFC 9457 problem details, with our extensions and the deprecated `error` object.
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert set(body) == {
        "type",
        "title",
        "status",
        "detail",
        "instance",
        "code",
        "errors",
        "request_id",
        "error",
    }
    assert body["status"] == status
    assert body["code"] == code
    assert body["detail"]
    assert body["request_id"] == response["X-Request-ID"]
    assert body["error"] == {"code": code, "message": body["detail"], "fields": body["errors"]}
    return dict(body)


# --- Reads ---------------------------------------------------------------------------------------


def test_it_lists_public_products_with_status(anon: Client, world: World) -> None:
    response = anon.get("/api/v1/products/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    by_slug = {p["slug"]: p for p in body["results"]}
    assert set(by_slug) == {"gmail", "cloud-storage"}
    assert by_slug["cloud-storage"]["status"] == "partial_outage"
    assert by_slug["gmail"]["status"] == "operational"
    assert by_slug["gmail"]["group"] == "Workspace"
    assert set(by_slug["gmail"]) == {
        "id", "slug", "name", "description", "group", "position", "status", "is_public", "archived_at",
        "created_at", "updated_at",
    }  # fmt: skip


def test_it_hides_staff_only_products_from_anonymous_and_non_staff(
    anon: Client, user_api: Client, staff_api: Client, world: World
) -> None:
    for client in (anon, user_api):
        assert "billing-backend" not in anon.get("/api/v1/products/").content.decode()
        assert client.get("/api/v1/products/billing-backend/").status_code == 404
    assert staff_api.get("/api/v1/products/billing-backend/").json()["is_public"] is False
    assert staff_api.get("/api/v1/products/").json()["count"] == 3


def test_it_shows_a_product_and_locations(anon: Client, world: World) -> None:
    assert anon.get("/api/v1/products/gmail/").json()["name"] == "Gmail"
    locations = anon.get("/api/v1/locations/").json()["results"]
    assert {"name": "us-central1-b", "display_name": "", "kind": "zone", "parent": "us-central1"} in locations
    assert anon.get("/api/v1/locations/us-central1/").json()["kind"] == "region"
    assert_error(anon.get("/api/v1/locations/nowhere/"), 404, "not_found")


def test_it_shows_incidents_with_windows_updates_and_published_report(anon: Client, world: World) -> None:
    response = anon.get(f"/api/v1/incidents/{world.outage.public_id}/")
    assert response.status_code == 200
    body = response.json()
    assert body["title"] == "Gmail unavailable for web users"
    assert body["status"] == "postmortem"
    assert body["url"].endswith(f"/incidents/{world.outage.public_id}/")
    assert [(w["product"], w["level"], w["ended_at"]) for w in body["windows"]] == [
        ("gmail", "major_outage", "2009-09-01T21:15:00Z")
    ]
    assert [u["status"] for u in body["updates"]] == ["resolved", "investigating"]
    assert body["report"]["status"] == "published"
    assert body["report"]["summary_html"] == "<p>Request routers ran <strong>out of headroom</strong>.</p>"
    assert "internal_notes" not in body


def test_it_hides_draft_reports_unless_staff(
    anon: Client, user_api: Client, staff_api: Client, world: World
) -> None:
    url = f"/api/v1/incidents/{world.drafted.public_id}/"
    for client in (anon, user_api):
        body = client.get(url).json()
        assert body["report"] is None
        assert "DRAFT-ONLY" not in client.get("/api/v1/incidents/").content.decode()
    assert staff_api.get(url).json()["report"]["status"] == "draft"


def test_it_hides_private_incidents_and_staff_only_windows(
    anon: Client, user_api: Client, staff_api: Client, world: World
) -> None:
    for client in (anon, user_api):
        ids = {i["id"] for i in client.get("/api/v1/incidents/").json()["results"]}
        assert ids == {world.outage.public_id, world.ongoing.public_id, world.drafted.public_id}
        assert_error(client.get(f"/api/v1/incidents/{world.hidden.public_id}/"), 404, "not_found")
        assert_error(
            client.get(f"/api/v1/incidents/{world.staff_only_product_incident.public_id}/"), 404, "not_found"
        )
    staff_ids = {i["id"] for i in staff_api.get("/api/v1/incidents/").json()["results"]}
    assert {world.hidden.public_id, world.staff_only_product_incident.public_id} <= staff_ids


def test_it_filters_orders_and_paginates_incidents(anon: Client, world: World) -> None:
    def ids(query: str) -> list[str]:
        response = anon.get(f"/api/v1/incidents/?{query}")
        assert response.status_code == 200, response.content
        return [i["id"] for i in response.json()["results"]]

    assert ids("product=cloud-storage") == [world.ongoing.public_id]
    assert ids("product=billing-backend") == []
    assert ids("status=monitoring") == [world.ongoing.public_id]
    assert set(ids("status=postmortem&status=resolved")) == {world.outage.public_id, world.drafted.public_id}
    assert ids("started_after=2026-01-01T00:00:00Z&started_before=2026-02-01T00:00:00Z") == [
        world.drafted.public_id
    ]
    assert ids("ordering=started_at") == [
        world.outage.public_id,
        world.drafted.public_id,
        world.ongoing.public_id,
    ]
    assert ids("") == [world.ongoing.public_id, world.drafted.public_id, world.outage.public_id]
    first = anon.get("/api/v1/incidents/?page_size=1").json()
    assert first["previous"] is None
    page = anon.get(first["next"]).json()
    assert page["count"] == 3
    assert [i["id"] for i in page["results"]] == [world.drafted.public_id]
    assert page["next"] and page["previous"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=exploded", "status"),
        ("ordering=internal_notes", "ordering"),
        ("ordering=-title", "ordering"),
        ("started_after=yesterday", "started_after"),
    ],
)
def test_it_refuses_bad_filters_with_400(anon: Client, world: World, query: str, field: str) -> None:
    error = assert_error(anon.get(f"/api/v1/incidents/?{query}"), 400, "invalid")
    assert field in error["errors"]


def test_it_answers_an_empty_page_for_a_range_that_ends_before_it_starts(anon: Client, world: World) -> None:
    # Schema-valid (schemathesis positive_data_acceptance): a filter nothing matches.
    response = anon.get(
        "/api/v1/incidents/?started_after=2026-02-01T00:00:00Z&started_before=2026-01-01T00:00:00Z"
    )
    assert response.status_code == 200, response.content
    assert response.json()["count"] == 0
    assert response.json()["results"] == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=99", "page"),
        ("page=-1", "page"),
        ("cursor=bogus", "cursor"),
        ("cursor=", "cursor"),
        ("page_size=0", "page_size"),
    ],
)
def test_it_refuses_bad_paging_with_400_naming_the_parameter(
    anon: Client, world: World, query: str, field: str
) -> None:
    # Never a 404: pages are cursors now, and a page number is not a parameter of a list.
    assert field in assert_error(anon.get(f"/api/v1/incidents/?{query}"), 400, "invalid")["errors"]


def test_it_lists_maintenance_separately(anon: Client, world: World, staff_api: Client) -> None:
    created = post(
        staff_api,
        "/api/v1/maintenance/",
        {
            "title": "Storage firmware rollout",
            "scheduled_for": "2030-01-05T10:00:00Z",
            "scheduled_until": "2030-01-05T12:00:00Z",
            "windows": [
                {
                    "product": "cloud-storage",
                    "level": "under_maintenance",
                    "started_at": "2030-01-05T10:00:00Z",
                }
            ],
        },
    )
    assert created.status_code == 201, created.content
    listed = anon.get("/api/v1/maintenance/").json()["results"]
    assert [m["title"] for m in listed] == ["Planned network work", "Storage firmware rollout"]
    assert {m["status"] for m in listed} == {"scheduled"}
    assert created.json()["id"] not in {i["id"] for i in anon.get("/api/v1/incidents/").json()["results"]}
    assert_error(anon.get(f"/api/v1/incidents/{created.json()['id']}/"), 404, "not_found")


def test_it_reports_the_overall_status(anon: Client, world: World) -> None:
    body = anon.get("/api/v1/status/").json()
    assert body["indicator"] == "major"  # a partial outage is open
    assert body["description"] == "Partial System Outage"
    assert body["active_incidents"] == 1
    assert {p["slug"]: p["status"] for p in body["products"]} == {
        "gmail": "operational",
        "cloud-storage": "partial_outage",
    }


# --- The auth matrix of every write ---------------------------------------------------------------

Write = tuple[str, str, Callable[[World], str], Callable[[World], dict[str, Any]], int]


def _approved(incident: Incident) -> dict[str, Any]:
    """Approve the draft report (publishing needs it, ADR 0021); the body is empty."""
    approve_report(incident)
    return {}


WRITES: list[Write] = [
    ("open-incident", "post", lambda w: "/api/v1/incidents/", lambda w: {"title": "New outage", "impact": "major"}, 201),
    ("post-update", "post", lambda w: f"/api/v1/incidents/{w.ongoing.public_id}/updates/", lambda w: {"status": "identified", "body": "Found it."}, 201),
    ("resolve", "post", lambda w: f"/api/v1/incidents/{w.ongoing.public_id}/resolve/", lambda w: {"body": "Fixed."}, 200),
    ("save-report", "put", lambda w: f"/api/v1/incidents/{w.drafted.public_id}/report/", lambda w: {"summary": "Ready now."}, 200),
    ("publish-report", "post", lambda w: f"/api/v1/incidents/{w.drafted.public_id}/report/publish/", lambda w: _approved(w.drafted), 200),
    ("schedule-maintenance", "post", lambda w: "/api/v1/maintenance/", lambda w: {"title": "DB upgrade", "scheduled_for": "2030-01-01T00:00:00Z", "scheduled_until": "2030-01-01T01:00:00Z"}, 201),
    ("end-maintenance", "post", lambda w: f"/api/v1/maintenance/{w.maintenance.public_id}/complete/", lambda w: {"resolved_at": "2030-06-01T03:00:00Z"}, 200),
    ("create-action-item", "post", lambda w: "/api/v1/action-items/", lambda w: {"incident": w.outage.public_id, "title": "Add router headroom alerts", "type": "detect", "priority": "P1"}, 201),
]  # fmt: skip


def _snapshot() -> tuple[int, ...]:
    return (
        Incident.objects.count(),
        IncidentUpdate.objects.count(),
        ImpactWindow.objects.count(),
        IncidentReport.objects.filter(status="published").count(),
        ActionItem.objects.count(),
        Incident.objects.filter(status__in=Incident.CLOSED_STATUSES).count(),
    )


@pytest.mark.parametrize("write", WRITES, ids=[w[0] for w in WRITES])
def test_it_refuses_writes_without_a_staff_token(
    anon: Client, user_api: Client, world: World, write: Write
) -> None:
    _, method, url, payload, _ = write
    before = _snapshot()
    assert_error(post(anon, url(world), payload(world), method), 401, "not_authenticated")
    assert_error(post(user_api, url(world), payload(world), method), 403, "permission_denied")
    assert _snapshot() == before
    assert IncidentReport.objects.get(incident=world.drafted).summary.startswith("DRAFT-ONLY")


@pytest.mark.parametrize("write", WRITES, ids=[w[0] for w in WRITES])
def test_it_accepts_writes_with_a_staff_token(staff_api: Client, world: World, write: Write) -> None:
    _, method, url, payload, expected = write
    before = _snapshot()
    response = post(staff_api, url(world), payload(world), method)
    assert response.status_code == expected, response.content
    if method == "put":
        assert IncidentReport.objects.get(incident=world.drafted).summary == "Ready now."
    else:
        assert _snapshot() != before


def test_it_refuses_session_writes_without_csrf(client: Client, alice: Any, world: World) -> None:
    client.force_login(alice)
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(alice)
    before = _snapshot()
    response = post(csrf_client, "/api/v1/incidents/", {"title": "Via session"})
    assert_error(response, 403, "permission_denied")
    assert _snapshot() == before


# --- Effects of writes ---------------------------------------------------------------------------


def test_it_opens_an_incident_with_windows_and_it_shows_on_the_public_page(
    anon: Client, staff_api: Client, world: World, alice: Any
) -> None:
    response = post(
        staff_api,
        "/api/v1/incidents/",
        {
            "title": "Gmail delivery delays",
            "impact": "critical",
            "body": "We are investigating delays.",
            "started_at": "2026-11-29T10:00:00Z",
            "windows": [
                {"product": "gmail", "level": "major_outage", "started_at": "2026-11-29T10:00:00Z"},
                {
                    "product": "cloud-storage",
                    "level": "degraded_performance",
                    "location": "us-central1",
                    "started_at": "2026-11-29T10:05:00Z",
                },
            ],
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    incident = Incident.objects.get(public_id=body["id"])
    assert incident.created_by == alice
    assert incident.windows.count() == 2
    assert incident.updates.get().body == "We are investigating delays."

    summary = anon.get("/api/v2/summary.json").json()
    assert body["id"] in {i["id"] for i in summary["incidents"]}
    statuses = {c["name"]: c["status"] for c in summary["components"]}
    assert statuses["Gmail"] == "major_outage"
    assert summary["status"]["indicator"] == "critical"
    # The HTML status page (built separately) shows it too.
    page = anon.get("/")
    assert page.status_code == 200
    assert "Gmail delivery delays" in page.content.decode()


def test_it_posts_updates_resolves_and_publishes_through_the_services(
    anon: Client, staff_api: Client, world: World
) -> None:
    base = f"/api/v1/incidents/{world.ongoing.public_id}"
    updated = post(staff_api, f"{base}/updates/", {"status": "identified", "body": "Bad **disk** pool."})
    # A posted update answers with the update itself (documented change, issue 18).
    assert updated.status_code == 201
    assert updated.json()["status"] == "identified"
    assert updated.json()["body_html"] == "<p>Bad <strong>disk</strong> pool.</p>"
    assert updated["Location"] == f"{base}/updates/{updated.json()['id']}/"
    world.ongoing.refresh_from_db()
    assert world.ongoing.status == "identified"

    resolved = post(
        staff_api, f"{base}/resolve/", {"body": "Recovered.", "resolved_at": "2026-10-09T16:46:00Z"}
    )
    assert resolved.status_code == 200
    world.ongoing.refresh_from_db()
    assert world.ongoing.status == "resolved"
    assert world.ongoing.resolved_at == utc(2026, 10, 9, 16, 46)
    assert world.ongoing.windows.get().ended_at == utc(2026, 10, 9, 16, 46)

    # Resolving twice is a service error: 400 with the message, nothing changes.
    again = assert_error(post(staff_api, f"{base}/resolve/", {}), 400, "invalid")
    assert again["detail"] == "This incident is already resolved."

    early = assert_error(post(staff_api, f"{base}/report/publish/", {}), 400, "invalid")
    assert "report" in early["detail"].lower()
    saved = post(staff_api, f"{base}/report/", {"summary": "Disk pool exhausted.", "kind": "mini"}, "put")
    assert saved.json()["report"]["status"] == "draft"
    assert anon.get(f"{base}/").json()["report"] is None
    assert_error(post(staff_api, f"{base}/report/publish/", {}), 409, "not_approved")
    approve_report(world.ongoing)
    # The author (the key's owner) does not publish it: another approver does.
    carol = User.objects.create_user("carol", "carol@example.org", "x", is_staff=True, is_superuser=True)
    approver_api = Client(HTTP_AUTHORIZATION=f"Token {key_for(carol)}")
    published = post(approver_api, f"{base}/report/publish/", {})
    assert published.json()["status"] == "postmortem"
    assert anon.get(f"{base}/").json()["report"]["summary"] == "Disk pool exhausted."


def test_it_schedules_and_ends_maintenance(anon: Client, staff_api: Client, world: World) -> None:
    created = post(
        staff_api,
        "/api/v1/maintenance/",
        {"title": "Network maintenance", "scheduled_for": "2024-12-01T01:00:00Z", "scheduled_until": "2024-12-01T03:00:00Z"},
    ).json()  # fmt: skip
    url = f"/api/v1/maintenance/{created['id']}"
    assert (
        post(staff_api, f"{url}/updates/", {"status": "in_progress", "body": "Started."}).status_code == 201
    )
    active = anon.get("/api/v2/scheduled-maintenances/active.json").json()["scheduled_maintenances"]
    assert [m["id"] for m in active] == [created["id"]]
    wrong = assert_error(
        post(staff_api, f"{url}/updates/", {"status": "monitoring", "body": "x"}), 400, "invalid"
    )
    assert "status" in wrong["errors"]
    done = post(staff_api, f"{url}/complete/", {"body": "All done."})
    assert done.status_code == 200
    assert done.json()["status"] == "completed"
    assert anon.get("/api/v2/scheduled-maintenances/active.json").json()["scheduled_maintenances"] == []


def test_it_reports_service_validation_errors_per_field(staff_api: Client, world: World) -> None:
    before = _snapshot()
    error = assert_error(
        post(
            staff_api,
            "/api/v1/incidents/",
            {
                "title": "Bad window",
                "windows": [
                    {
                        "product": "gmail",
                        "level": "major_outage",
                        "started_at": "2026-01-02T00:00:00Z",
                        "ended_at": "2026-01-01T00:00:00Z",
                    }
                ],
            },
        ),
        400,
        "invalid",
    )
    assert error["errors"] == {"windows.0.ended_at": ["The end must not be before the start."]}
    nested = assert_error(
        post(
            staff_api, "/api/v1/incidents/", {"title": "x", "windows": [{"product": "nope", "level": "bad"}]}
        ),
        400,
        "invalid",
    )
    assert {"windows.0.product", "windows.0.level", "windows.0.started_at"} <= set(nested["errors"])
    header = assert_error(
        post(staff_api, "/api/v1/incidents/", {"title": "Line\r\nBcc: x@example.org"}), 400, "invalid"
    )
    assert "title" in header["errors"]
    assert_error(
        staff_api.post("/api/v1/incidents/", data="{not json", content_type="application/json"),
        400,
        "parse_error",
    )
    assert _snapshot() == before


def test_it_keeps_action_items_staff_only(
    anon: Client, user_api: Client, staff_api: Client, world: World
) -> None:
    post(
        staff_api,
        "/api/v1/action-items/",
        {"incident": world.outage.public_id, "title": "Alert on router load"},
    )
    assert_error(anon.get("/api/v1/action-items/"), 401, "not_authenticated")
    assert_error(user_api.get("/api/v1/action-items/"), 403, "permission_denied")
    items = staff_api.get(f"/api/v1/action-items/?incident={world.outage.public_id}").json()["results"]
    assert [(i["title"], i["status"], i["is_public"]) for i in items] == [
        ("Alert on router load", "open", False)
    ]
    assert_error(anon.get(f"/api/v1/action-items/{items[0]['id']}/"), 401, "not_authenticated")
    assert (
        staff_api.get(f"/api/v1/action-items/{items[0]['id']}/").json()["incident"] == world.outage.public_id
    )
    assert_error(staff_api.get("/api/v1/action-items/?ordering=title"), 400, "invalid")


def test_it_starts_an_incident_at_its_earliest_window(staff_api: Client, world: World) -> None:
    response = post(
        staff_api,
        "/api/v1/incidents/",
        {
            "title": "Gmail slow since the morning",
            "windows": [
                {"product": "gmail", "level": "degraded_performance", "started_at": "2026-11-29T10:05:00Z"},
                {"product": "cloud-storage", "level": "partial_outage", "started_at": "2026-11-29T09:40:00Z"},
            ],
        },
    )
    assert response.status_code == 201, response.content
    incident = Incident.objects.get(public_id=response.json()["id"])
    assert incident.started_at == utc(2026, 11, 29, 9, 40)
    # An explicit start still wins.
    explicit = post(
        staff_api,
        "/api/v1/incidents/",
        {
            "title": "Declared with its own start",
            "started_at": "2026-11-29T09:00:00Z",
            "windows": [{"product": "gmail", "level": "major_outage", "started_at": "2026-11-29T09:30:00Z"}],
        },
    )
    assert Incident.objects.get(public_id=explicit.json()["id"]).started_at == utc(2026, 11, 29, 9, 0)


def test_it_names_the_window_an_error_concerns(staff_api: Client, world: World) -> None:
    before = _snapshot()
    error = assert_error(
        post(
            staff_api,
            "/api/v1/incidents/",
            {
                "title": "Second window ends before it starts",
                "windows": [
                    {"product": "gmail", "level": "major_outage", "started_at": "2026-11-29T10:00:00Z"},
                    {
                        "product": "cloud-storage",
                        "level": "partial_outage",
                        "started_at": "2026-11-29T11:00:00Z",
                        "ended_at": "2026-11-29T10:30:00Z",
                    },
                ],
            },
        ),
        400,
        "invalid",
    )
    assert error["errors"] == {"windows.1.ended_at": ["The end must not be before the start."]}
    assert _snapshot() == before
