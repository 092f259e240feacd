"""The console's Edit incident screen: title, times, summary and internal notes through
incident_edit, refusals as form errors, and only for roles that may edit."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, TestCase

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


@pytest.fixture
def incident(db: None) -> Incident:
    gmail = make_product("Gmail")
    return services.incident_open(
        title="Gmail errors",
        started_at=utc(2026, 10, 8, 7, 50, 30),  # seconds: the form types minutes only
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=gmail, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=utc(2026, 10, 8, 7, 50, 30)
            )
        ],
    )


def _url(incident: Incident) -> str:
    return f"/manage/incidents/{incident.public_id}/edit/"


def _form(incident: Incident, **changes: str) -> dict[str, str]:
    # The form as the browser sends it untouched (US/Pacific: 07:50 UTC is 00:50 PDT).
    data = {
        "title": incident.title,
        "started_at": "2026-10-08T00:50",
        "detected_at": "",
        "summary": "",
        "internal_notes": "",
    }
    return {**data, **changes}


def test_it_edits_the_title_times_and_notes(staff_client: Client, incident: Incident) -> None:
    page = staff_client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    assert f'href="{_url(incident)}">Edit incident</a>' in page
    html = staff_client.get(_url(incident)).content.decode()
    assert 'name="started_at" value="2026-10-08T00:50"' in html  # typed in the display zone
    response = post(
        staff_client,
        _url(incident),
        _form(
            incident,
            title="Gmail: errors sending mail",
            detected_at="2026-10-08T01:05",
            summary="Some users could **not** send mail.",
            internal_notes="Paged by the SMTP canary.",
        ),
    )
    assert response.status_code == 302 and response["Location"] == f"/manage/incidents/{incident.public_id}/"
    incident.refresh_from_db()
    assert incident.title == "Gmail: errors sending mail"
    assert incident.detected_at == utc(2026, 10, 8, 8, 5)
    assert incident.started_at == utc(2026, 10, 8, 7, 50, 30)  # untouched: seconds kept
    assert "<strong>not</strong>" in incident.summary_html
    assert incident.internal_notes == "Paged by the SMTP canary."
    page = staff_client.get(response["Location"]).content.decode()
    assert "Saved the changes to the incident." in page and "Thu 8 Oct 2026, 01:05 PDT" in page


def test_it_saves_nothing_when_nothing_changed(staff_client: Client, incident: Incident) -> None:
    before = Incident.objects.values().get(pk=incident.pk)
    response = post(staff_client, _url(incident), _form(incident))
    assert response.status_code == 302
    assert Incident.objects.values().get(pk=incident.pk) == before
    assert "Nothing was changed." in staff_client.get(response["Location"]).content.decode()


def test_it_shows_refusals_on_the_form_and_saves_nothing(staff_client: Client, incident: Incident) -> None:
    before = Incident.objects.values().get(pk=incident.pk)
    # Detected before impact began: the service refuses, on the field.
    response = post(staff_client, _url(incident), _form(incident, detected_at="2026-10-08T00:10"))
    assert response.status_code == 200
    assert response.context["form"].errors["detected_at"]
    # An empty title and an empty start: the form refuses.
    response = post(staff_client, _url(incident), _form(incident, title="", started_at=""))
    errors = response.context["form"].errors
    assert errors["title"] and errors["started_at"]
    assert Incident.objects.values().get(pk=incident.pk) == before


def test_it_refuses_a_role_that_may_not_edit(client: Client, incident: Incident) -> None:
    viewer = User.objects.create_user("vera", "vera@example.org", "pw", is_staff=True)
    viewer.groups.add(Group.objects.get(name="Viewer"))
    client.force_login(viewer)
    assert "Edit incident" not in client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    assert client.get(_url(incident)).status_code == 403
    response = post(client, _url(incident), _form(incident, title="Hijacked"))
    assert response.status_code == 403
    incident.refresh_from_db()
    assert incident.title == "Gmail errors"


def test_it_previews_the_summary_without_saving(staff_client: Client, incident: Incident) -> None:
    response = post(
        staff_client, _url(incident), _form(incident, summary="Mail was **delayed**.", _preview="1")
    )
    assert response.status_code == 200
    assert "<strong>delayed</strong>" in response.content.decode()
    incident.refresh_from_db()
    assert incident.summary == ""
