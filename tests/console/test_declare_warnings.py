"""Declare: a recent incident with the same title warns (and may be overruled once), and
a backdated first message keeps its real posting time, which staff see next to it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, TestCase
from freezegun import freeze_time

from incidents.models import ImpactWindow, Incident
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db


def post(client: Client, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post("/manage/declare/", data)


@pytest.fixture
def data(db: None) -> dict[str, Any]:
    gmail = make_product("Gmail")
    return {
        "title": "Gmail errors",
        "status": "investigating",
        "started_at": "2026-10-07T17:50",  # US/Pacific: 00:50 UTC on the 8th
        f"level_{gmail.pk}_0": ImpactWindow.Level.MAJOR_OUTAGE,
        "body": "We are investigating.",
        "notify": "on",
        "_publish": "1",
    }


@freeze_time("2026-10-08T01:10:00Z")
def test_it_warns_of_a_recent_incident_with_the_same_title(
    staff_client: Client, data: dict[str, Any]
) -> None:
    post(staff_client, data)
    first = Incident.objects.get()
    response = post(staff_client, {**data, "title": "  gmail   ERRORS "})
    assert response.status_code == 200
    assert Incident.objects.count() == 1
    html = response.content.decode()
    assert "An incident with this title was declared" in html
    assert f'<a href="/manage/incidents/{first.public_id}/">Gmail errors</a>' in html
    assert (
        f'<input type="checkbox" name="confirm_duplicate_of" value="{first.public_id}" id="id_confirm_duplicate_of">'
        in html
    )
    assert '<label for="id_confirm_duplicate_of">Declare a new incident anyway</label>' in html
    # What was typed is kept, to send again.
    assert 'name="title" value="  gmail   ERRORS "' in html

    confirmed = {**data, "confirm_duplicate_of": first.public_id}
    response = post(staff_client, confirmed)
    assert response.status_code == 302
    second = Incident.objects.exclude(pk=first.pk).get()
    assert response["Location"] == f"/manage/incidents/{second.public_id}/"
    # The same confirmation sent twice (a double click) files no third incident: it is
    # warned again, now of the incident the first click filed.
    again = post(staff_client, confirmed)
    assert again.status_code == 200 and Incident.objects.count() == 2
    assert f'value="{second.public_id}" id="id_confirm_duplicate_of"' in again.content.decode()


def test_it_files_the_same_title_again_after_the_guard_window(
    staff_client: Client, data: dict[str, Any]
) -> None:
    with freeze_time("2026-10-08T01:10:00Z"):
        post(staff_client, data)
    with freeze_time("2026-10-08T01:30:00Z"):
        response = post(staff_client, data)
    assert response.status_code == 302 and Incident.objects.count() == 2


@freeze_time("2026-10-08T01:10:00Z")
def test_it_shows_the_first_message_when_it_is_posted_unless_backdated(
    staff_client: Client, data: dict[str, Any]
) -> None:
    post(staff_client, data)
    post(staff_client, {**data, "title": "Drive errors", "first_update_at": "2026-10-07T18:00"})
    plain = Incident.objects.get(title="Gmail errors").updates.get()
    assert plain.display_at == plain.created_at == utc(2026, 10, 8, 1, 10)
    backdated = Incident.objects.get(title="Drive errors")
    entry = backdated.updates.get()
    assert entry.display_at == utc(2026, 10, 8, 1, 0) and entry.created_at == utc(2026, 10, 8, 1, 10)

    # Staff see the shown time and the real posting time.
    html = staff_client.get(f"/manage/incidents/{backdated.public_id}/").content.decode()
    assert "shown as <time" in html and "Wed 7 Oct 2026, 18:00 PDT</time>, <strong>posted <time" in html
    assert "7 Oct, 18:10 PDT</time></strong>" in html
    html = staff_client.get(f"/manage/incidents/{plain.incident.public_id}/").content.decode()
    assert "shown as" not in html and "Wed 7 Oct 2026, 18:10 PDT" in html


@freeze_time("2026-10-08T01:10:00Z")
def test_it_refuses_a_first_message_shown_before_the_impact_began(
    staff_client: Client, data: dict[str, Any]
) -> None:
    response = post(staff_client, {**data, "first_update_at": "2026-10-07T17:40"})
    assert response.status_code == 200
    assert response.context["form"].errors["first_update_at"]
    assert not Incident.objects.exists()
