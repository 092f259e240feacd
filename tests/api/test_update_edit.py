"""PATCH /api/v1/incidents/<id>/updates/<update_id>/: correct a published update's text
through the same service as the console, with If-Match on the update's own ETag (issue 28)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from incidents.models import IncidentUpdate, IncidentUpdateRevision
from subscriptions.models import NotificationEvent
from tests.api.conftest import World
from tests.api.test_v1 import assert_error
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db


def send(client: Client, method: str, url: str, payload: Any = None, **headers: str) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(client, method)(
            url, data=json.dumps(payload or {}), content_type="application/json", headers=headers
        )


def _update(world: World) -> tuple[IncidentUpdate, str]:
    update = world.ongoing.updates.get(body="A fix is rolling out.")
    return update, f"/api/v1/incidents/{world.ongoing.public_id}/updates/{update.pk}/"


def test_staff_correct_an_update_and_the_public_sees_edited_at(
    staff_api: Client, anon: Client, alice: User, world: World
) -> None:
    make_subscriber()
    update, url = _update(world)
    assert anon.get(url).json()["edited_at"] is None
    events = NotificationEvent.objects.count()
    response = send(staff_api, "patch", url, {"body": "A fix is rolling out to **every** zone."})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["body"] == "A fix is rolling out to **every** zone."
    assert "<strong>every</strong>" in body["body_html"]
    assert body["edited_at"] is not None and body["status"] == "monitoring"
    update.refresh_from_db()
    assert update.edited_at is not None and update.body == body["body"]
    revision = IncidentUpdateRevision.objects.get(update=update)
    assert (revision.body, revision.edited_by) == ("A fix is rolling out.", alice)
    assert NotificationEvent.objects.count() == events  # a correction is not news
    public = anon.get(f"/api/v1/incidents/{world.ongoing.public_id}/").json()
    shown = next(u for u in public["updates"] if u["id"] == update.pk)
    assert shown["edited_at"] == body["edited_at"] and shown["body"] == body["body"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"body": ""}, "body"),
        ({"body": "A fix is rolling out."}, "body"),  # unchanged
        ({"body": "New.", "status": "resolved"}, "status"),  # body only
    ],
)
def test_it_refuses_bad_input_naming_the_field(
    staff_api: Client, world: World, payload: dict[str, str], field: str
) -> None:
    update, url = _update(world)
    error = assert_error(send(staff_api, "patch", url, payload), 400, "invalid")
    assert field in error["errors"]
    update.refresh_from_db()
    assert update.edited_at is None and not IncidentUpdateRevision.objects.exists()


def test_only_staff_may_correct(anon: Client, user_api: Client, world: World) -> None:
    update, url = _update(world)
    assert send(anon, "patch", url, {"body": "Defaced."}).status_code in (401, 403)
    assert send(user_api, "patch", url, {"body": "Defaced."}).status_code == 403
    update.refresh_from_db()
    assert update.body == "A fix is rolling out."


def test_an_update_of_another_incident_is_a_404(staff_api: Client, world: World) -> None:
    update, _ = _update(world)
    url = f"/api/v1/incidents/{world.outage.public_id}/updates/{update.pk}/"
    assert send(staff_api, "patch", url, {"body": "Moved."}).status_code == 404


def test_if_match_takes_the_updates_etag_and_refuses_a_stale_one(staff_api: Client, world: World) -> None:
    update, url = _update(world)
    etag = staff_api.get(url)["ETag"]
    first = send(staff_api, "patch", url, {"body": "First correction."}, **{"If-Match": etag})
    assert first.status_code == 200, first.content
    assert first["ETag"] == staff_api.get(url)["ETag"] != etag
    stale = send(staff_api, "patch", url, {"body": "Second correction."}, **{"If-Match": etag})
    assert_error(stale, 412, "precondition_failed")
    following = send(staff_api, "patch", url, {"body": "Second correction."}, **{"If-Match": first["ETag"]})
    assert following.status_code == 200
    update.refresh_from_db()
    assert update.body == "Second correction."
    assert list(update.revisions.values_list("body", flat=True)) == [
        "A fix is rolling out.",
        "First correction.",
    ]
