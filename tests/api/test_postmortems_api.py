"""The postmortem timeline through /api/v1/ (staff): entries and links under an incident
(list, create, get, change with If-Match, delete), the automatic timeline read-only, bad
input refused with problem+json and nothing changed, unknown ids 404, non-staff refused."""

from __future__ import annotations

import pytest
from django.test import Client

from postmortems.models import IncidentLink, TimelineEntry
from tests.api.catalogue_helpers import send
from tests.api.conftest import World
from tests.api.test_v1 import assert_error

pytestmark = pytest.mark.django_db


def _entries(world: World) -> str:
    return f"/api/v1/incidents/{world.outage.public_id}/timeline-entries/"


def test_staff_add_change_and_delete_an_entry(staff_api: Client, world: World) -> None:
    url = _entries(world)
    created = send(
        staff_api,
        "post",
        url,
        {"at": "2026-01-01T10:05:00Z", "text": "Paged *on-call*", "phase": "detection"},
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["visibility"] == "internal" and body["author"] == "alice"
    assert body["text_html"] == "<p>Paged <em>on-call</em></p>"
    detail = created["Location"]
    assert detail == f"{url}{body['id']}/"
    assert [e["id"] for e in staff_api.get(url).json()] == [body["id"]]
    etag = staff_api.get(detail)["ETag"]
    assert_error(
        send(staff_api, "patch", detail, {"visibility": "public"}, **{"If-Match": '"stale"'}),
        412,
        "precondition_failed",
    )
    assert TimelineEntry.objects.get().visibility == "internal"
    changed = send(staff_api, "patch", detail, {"visibility": "public"}, **{"If-Match": etag})
    assert changed.status_code == 200 and changed.json()["visibility"] == "public"
    assert send(staff_api, "delete", detail).status_code == 204
    assert not TimelineEntry.objects.exists()


@pytest.mark.parametrize(
    "payload",
    [
        {"at": "2026-01-01T10:05:00Z", "text": "   "},
        {"at": "2026-01-01T10:05:00Z", "text": "x", "phase": "guessing"},
        {"at": "2026-01-01T10:05:00Z", "text": "x", "visibility": "secret"},
        {"at": "2099-01-01T10:05:00Z", "text": "x"},
        {"at": "yesterday", "text": "x"},
        {"text": "x"},
        {"at": "2026-01-01T10:05:00Z", "text": "x", "colour": "red"},
    ],
)
def test_bad_entries_are_400s_that_change_nothing(staff_api: Client, world: World, payload) -> None:  # type: ignore[no-untyped-def]
    response = send(staff_api, "post", _entries(world), payload)
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert not TimelineEntry.objects.exists()


def test_unknown_ids_are_404s(staff_api: Client, world: World) -> None:
    assert_error(staff_api.get("/api/v1/incidents/zzzzzzzzzzzz/timeline-entries/"), 404, "not_found")
    assert_error(staff_api.get("/api/v1/incidents/zzzzzzzzzzzz/timeline/"), 404, "not_found")
    assert_error(staff_api.get(_entries(world) + "999999/"), 404, "not_found")
    created = send(staff_api, "post", _entries(world), {"at": "2026-01-01T10:05:00Z", "text": "x"}).json()
    other = f"/api/v1/incidents/{world.ongoing.public_id}/timeline-entries/{created['id']}/"
    assert_error(send(staff_api, "delete", other), 404, "not_found")  # another incident's entry
    assert TimelineEntry.objects.count() == 1


def test_non_staff_are_refused(user_api: Client, anon: Client, world: World) -> None:
    for client in (user_api, anon):
        assert client.get(_entries(world)).status_code in (401, 403)
        response = send(client, "post", _entries(world), {"at": "2026-01-01T10:05:00Z", "text": "x"})
        assert response.status_code in (401, 403)
    assert not TimelineEntry.objects.exists()


def test_links_both_ways_with_errors(staff_api: Client, world: World) -> None:
    url = f"/api/v1/incidents/{world.ongoing.public_id}/links/"
    made = send(staff_api, "post", url, {"to_incident": world.outage.public_id, "kind": "recurrence_of"})
    assert made.status_code == 201, made.content
    link = made.json()
    assert (link["from_incident"], link["to_incident"]) == (world.ongoing.public_id, world.outage.public_id)
    back = staff_api.get(f"/api/v1/incidents/{world.outage.public_id}/links/").json()
    assert [item["id"] for item in back] == [link["id"]]
    for payload in (
        {"to_incident": world.ongoing.public_id, "kind": "related_to"},  # itself
        {"to_incident": world.outage.public_id, "kind": "related_to"},  # the pair again
        {"to_incident": "zzzzzzzzzzzz", "kind": "related_to"},
        {"to_incident": world.outage.public_id, "kind": "cousin_of"},
    ):
        refused = send(staff_api, "post", url, payload)
        assert refused.status_code == 400, (payload, refused.content)
        assert refused["Content-Type"] == "application/problem+json"
    reverse = send(
        staff_api,
        "post",
        f"/api/v1/incidents/{world.outage.public_id}/links/",
        {"to_incident": world.ongoing.public_id, "kind": "related_to"},
    )
    assert reverse.status_code == 400 and "already linked" in reverse.content.decode()
    assert IncidentLink.objects.count() == 1
    detail = f"{url}{link['id']}/"
    changed = send(staff_api, "patch", detail, {"kind": "related_to"})
    assert changed.status_code == 200 and changed.json()["kind"] == "related_to"
    assert send(staff_api, "delete", detail).status_code == 204
    assert not IncidentLink.objects.exists()


def test_the_automatic_timeline_is_read_only(staff_api: Client, world: World) -> None:
    url = f"/api/v1/incidents/{world.outage.public_id}/timeline/"
    rows = staff_api.get(url).json()
    kinds = [r["kind"] for r in rows]
    assert "impact_start" in kinds and "update" in kinds
    assert [r["at"] for r in rows] == sorted(r["at"] for r in rows)
    assert send(staff_api, "post", url, {}).status_code == 405
