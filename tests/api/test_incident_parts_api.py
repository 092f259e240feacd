"""An incident's parts through /api/v1/ (issue 31): action items changed and closed,
timeline and windows listed, a window's own ETag for If-Match, the report's sections,
drafts deleted, and the impact an incident takes from its windows."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from incidents import services
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport
from tests.api.catalogue_helpers import client_for, send
from tests.api.conftest import World
from tests.api.test_v1 import assert_error

pytestmark = pytest.mark.django_db


# --- Action items -----------------------------------------------------------------------------


@pytest.fixture
def item(world: World) -> ActionItem:
    return services.action_item_create(incident=world.outage, title="Add router headroom alerts")


def test_staff_change_an_action_item_with_if_match_and_close_it(
    staff_api: Client, item: ActionItem, alice: User
) -> None:
    url = f"/api/v1/action-items/{item.pk}/"
    etag = staff_api.get(url)["ETag"]
    changed = send(staff_api, "patch", url, {"priority": "P0", "owner": "alice"}, **{"If-Match": etag})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["priority"], changed.json()["owner"], changed.json()["title"]) == (
        "P0",
        "alice",
        "Add router headroom alerts",
    )
    assert_error(
        send(staff_api, "patch", url, {"priority": "P3"}, **{"If-Match": etag}), 412, "precondition_failed"
    )

    closed = send(staff_api, "post", f"{url}close/")
    assert closed.status_code == 200 and closed.json()["status"] == "done"
    refused = send(staff_api, "post", f"{url}close/", {"status": "wont_do"})
    assert refused.status_code == 400 and "reason" in refused.content.decode()
    item.refresh_from_db()
    assert item.status == "done"  # a refused drop changes nothing
    wont = send(
        staff_api,
        "post",
        f"{url}close/",
        {"status": "wont_do", "reason": "Superseded by the new router fleet."},
    )
    assert wont.status_code == 200 and wont.json()["status"] == "wont_do"
    item.refresh_from_db()
    assert (item.status, item.priority, item.owner) == ("wont_do", "P0", alice)


@pytest.mark.parametrize(
    ("method", "suffix", "payload", "field"),
    [
        ("patch", "", {"priority": "P9"}, "priority"),
        ("patch", "", {"owner": "bob"}, "owner"),  # not staff
        ("patch", "", {"tracker_url": "urn:x"}, "tracker_url"),
        ("patch", "", {"incident": "abc"}, "incident"),  # not editable
        ("post", "close/", {"status": "open"}, "status"),  # closing means closed
    ],
)
def test_bad_action_item_input_names_the_field(
    staff_api: Client,
    item: ActionItem,
    bob: User,
    method: str,
    suffix: str,
    payload: dict[str, Any],
    field: str,
) -> None:
    response = send(staff_api, method, f"/api/v1/action-items/{item.pk}/{suffix}", payload)
    assert field in assert_error(response, 400, "invalid")["errors"]
    item.refresh_from_db()
    assert (item.priority, item.status, item.owner) == ("P2", "open", None)


def test_only_a_write_key_of_staff_changes_action_items(item: ActionItem, alice: User, bob: User) -> None:
    url = f"/api/v1/action-items/{item.pk}/"
    for client in (client_for(bob), client_for(alice, "read")):
        assert_error(send(client, "patch", url, {"priority": "P0"}), 403, "permission_denied")
        assert_error(send(client, "post", f"{url}close/"), 403, "permission_denied")
    item.refresh_from_db()
    assert (item.priority, item.status) == ("P2", "open")


# --- Timeline and windows ---------------------------------------------------------------------


def test_the_timeline_and_windows_are_listed(anon: Client, staff_api: Client, world: World) -> None:
    base = f"/api/v1/incidents/{world.ongoing.public_id}/"
    updates = anon.get(f"{base}updates/")
    assert updates.status_code == 200, updates.content
    assert [u["status"] for u in updates.json()] == ["monitoring", "investigating"]  # newest first
    windows = anon.get(f"{base}windows/").json()
    assert [(w["product"], w["location"]) for w in windows] == [("cloud-storage", "us-central1-b")]
    # A staff-only product's window is for staff only; a draft's timeline too.
    staff_only = f"/api/v1/incidents/{world.staff_only_product_incident.public_id}/windows/"
    assert anon.get(staff_only).status_code == 404
    assert [w["product"] for w in staff_api.get(staff_only).json()] == ["billing-backend"]
    assert anon.get(f"/api/v1/incidents/{world.hidden.public_id}/updates/").status_code == 404


def test_a_window_write_checks_the_windows_own_etag(staff_api: Client, world: World) -> None:
    window = world.ongoing.windows.get()
    url = f"/api/v1/incidents/{world.ongoing.public_id}/windows/{window.pk}/"
    etag = staff_api.get(url)["ETag"]
    incident_etag = staff_api.get(f"/api/v1/incidents/{world.ongoing.public_id}/")["ETag"]
    assert etag != incident_etag
    wrong = send(staff_api, "patch", url, {"description": "Writes only."}, **{"If-Match": incident_etag})
    assert_error(wrong, 412, "precondition_failed")
    changed = send(staff_api, "patch", url, {"description": "Writes only."}, **{"If-Match": etag})
    assert changed.status_code == 200, changed.content
    assert_error(send(staff_api, "delete", url, **{"If-Match": etag}), 412, "precondition_failed")
    assert send(staff_api, "delete", url, **{"If-Match": changed["ETag"]}).status_code == 204
    assert not ImpactWindow.objects.filter(pk=window.pk).exists()


@pytest.mark.parametrize(
    ("levels", "impact"),
    [
        (["major_outage"], "critical"),
        (["degraded_performance", "partial_outage"], "major"),
        (["degraded_performance"], "minor"),
        ([], "none"),
    ],
)
def test_an_incident_without_an_impact_takes_its_worst_window(
    staff_api: Client, world: World, levels: list[str], impact: str
) -> None:
    windows = [
        {"product": slug, "level": level, "started_at": "2026-10-09T10:00:00Z"}
        for slug, level in zip(["gmail", "cloud-storage"], levels, strict=False)
    ]
    response = send(staff_api, "post", "/api/v1/incidents/", {"title": "Errors", "windows": windows})
    assert response.status_code == 201, response.content
    assert response.json()["impact"] == impact
    said = send(
        staff_api, "post", "/api/v1/incidents/", {"title": "Said", "impact": "minor", "windows": windows}
    )
    assert said.json()["impact"] == "minor"  # a stated impact stands


# --- Report sections ---------------------------------------------------------------------------


def test_report_sections_are_read_and_edited_with_if_match(
    anon: Client, staff_api: Client, world: World
) -> None:
    url = f"/api/v1/incidents/{world.drafted.public_id}/report/"
    assert anon.get(url).status_code == 404  # a draft report is staff-only
    report = staff_api.get(url)
    assert report.status_code == 200 and report.json()["summary"] == "DRAFT-ONLY wording that is not ready."
    changed = send(
        staff_api, "patch", url, {"root_cause": "A **cache** stampede."}, **{"If-Match": report["ETag"]}
    )
    assert changed.status_code == 200, changed.content
    body = changed.json()
    assert body["summary"] == "DRAFT-ONLY wording that is not ready."  # kept
    assert "<strong>cache</strong>" in body["root_cause_html"]
    stale = send(staff_api, "patch", url, {"summary": "Other."}, **{"If-Match": report["ETag"]})
    assert_error(stale, 412, "precondition_failed")
    bad = send(staff_api, "patch", url, {"sumary": "typo"})
    assert "sumary" in assert_error(bad, 400, "invalid")["errors"]
    assert (
        IncidentReport.objects.get(incident=world.drafted).summary == "DRAFT-ONLY wording that is not ready."
    )
    published = anon.get(f"/api/v1/incidents/{world.outage.public_id}/report/")
    assert published.status_code == 200 and published.json()["status"] == "published"


# --- Drafts --------------------------------------------------------------------------------------


def test_a_draft_is_deleted_and_a_public_incident_is_not(
    staff_api: Client, user_api: Client, world: World
) -> None:
    public = send(staff_api, "delete", f"/api/v1/incidents/{world.ongoing.public_id}/")
    assert "draft" in assert_error(public, 409, "in_use")["detail"]
    assert_error(
        send(user_api, "delete", f"/api/v1/incidents/{world.hidden.public_id}/"), 403, "permission_denied"
    )
    url = f"/api/v1/incidents/{world.hidden.public_id}/"
    etag = staff_api.get(url)["ETag"]
    assert send(staff_api, "delete", url, **{"If-Match": etag}).status_code == 204
    assert not Incident.objects.filter(pk=world.hidden.pk).exists()
    assert Incident.objects.filter(pk=world.ongoing.pk).exists()
