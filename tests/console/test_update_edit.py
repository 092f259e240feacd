"""Correcting a published update from the console: the edit screen shows the current
text and its history, saves through the service, notifies nobody; the admin links to it
instead of editing raw (issue 28)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, TestCase

from incidents import services
from incidents.models import ImpactWindow, Incident, IncidentUpdate, IncidentUpdateRevision
from subscriptions.models import NotificationEvent
from tests.builders import make_product, utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


@pytest.fixture
def incident(db: None) -> Incident:
    gmail = make_product("Gmail")
    make_subscriber()
    made = services.incident_open(
        title="Gmail errors",
        impact=Incident.Impact.MAJOR,
        started_at=utc(2026, 11, 30, 18, 0),
        body="We are investigating errors in **Gmial**.",
        windows=[
            services.WindowSpec(product=gmail, level=Level.PARTIAL_OUTAGE, started_at=utc(2026, 11, 30, 18))
        ],
    )
    services.incident_post_update(incident=made, status="identified", body="A bad config push.")
    return made


def _first(incident: Incident) -> IncidentUpdate:
    return incident.updates.order_by("created_at", "id").first()  # type: ignore[return-value]


def _url(incident: Incident, update: IncidentUpdate) -> str:
    return f"/manage/incidents/{incident.public_id}/updates/{update.pk}/edit/"


def test_the_incident_page_offers_edit_on_each_update(staff_client: Client, incident: Incident) -> None:
    page = staff_client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    for update in incident.updates.all():
        assert f'href="{_url(incident, update)}"' in page
        assert f'id="update-{update.pk}"' in page


def test_it_corrects_an_update_keeps_the_history_and_notifies_nobody(
    staff_client: Client, alice: User, incident: Incident
) -> None:
    update = _first(incident)
    url = _url(incident, update)
    page = staff_client.get(url)
    assert page.context["form"].initial == {"body": "We are investigating errors in **Gmial**."}
    assert "Never edited" in page.content.decode()
    events = NotificationEvent.objects.count()
    shown_at = update.display_at

    response = post(staff_client, url, {"body": "We are investigating errors in **Gmail**.", "_save": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"/manage/incidents/{incident.public_id}/#update-{update.pk}"
    update.refresh_from_db()
    assert update.body == "We are investigating errors in **Gmail**."
    assert "<strong>Gmail</strong>" in update.body_html
    assert update.edited_at is not None
    assert update.status == "investigating" and update.display_at == shown_at  # not moved
    revision = IncidentUpdateRevision.objects.get(update=update)
    assert (revision.body, revision.edited_by) == ("We are investigating errors in **Gmial**.", alice)
    assert NotificationEvent.objects.count() == events

    history = staff_client.get(url).content.decode()
    assert "Never edited" not in history
    assert "<strong>Gmial</strong>" in history  # the earlier version, rendered
    assert "by alice" in history
    incident_page = staff_client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    assert "Edited <time" in incident_page


def test_it_refuses_an_unchanged_or_empty_text(staff_client: Client, incident: Incident) -> None:
    update = _first(incident)
    url = _url(incident, update)
    unchanged = post(staff_client, url, {"body": update.body, "_save": "1"})
    assert unchanged.status_code == 200
    assert unchanged.context["form"].errors
    empty = post(staff_client, url, {"body": "  ", "_save": "1"})
    assert empty.status_code == 200
    assert empty.context["form"].errors["body"]
    assert not IncidentUpdateRevision.objects.exists()
    update.refresh_from_db()
    assert update.edited_at is None


def test_it_previews_without_saving(staff_client: Client, incident: Incident) -> None:
    update = _first(incident)
    response = post(staff_client, _url(incident, update), {"body": "*Previewed*", "_preview": "1"})
    assert response.status_code == 200
    assert "<em>Previewed</em>" in response.content.decode()
    update.refresh_from_db()
    assert update.edited_at is None


def test_an_update_of_another_incident_is_not_found(staff_client: Client, incident: Incident) -> None:
    other = services.incident_open(title="Other", started_at=utc(2026, 11, 30, 18), body="Other.")
    assert staff_client.get(_url(other, _first(incident))).status_code == 404


def test_a_viewer_may_not_edit(client: Client, incident: Incident) -> None:
    viewer = User.objects.create_user("vera", is_staff=True)
    viewer.groups.add(Group.objects.get(name="Viewer"))
    client.force_login(viewer)
    update = _first(incident)
    assert "updates/" not in client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    assert client.get(_url(incident, update)).status_code == 403
    assert post(client, _url(incident, update), {"body": "Hacked."}).status_code == 403
    update.refresh_from_db()
    assert update.edited_at is None


def test_the_admin_links_to_the_console_instead_of_editing_raw(
    staff_client: Client, incident: Incident
) -> None:
    page = staff_client.get(f"/admin/incidents/incident/{incident.pk}/change/").content.decode()
    for update in incident.updates.all():
        assert f'<a href="{_url(incident, update)}">Correct in the console</a>' in page
    assert 'name="updates-0-body"' not in page
