"""The console's timeline editor: the Responder adds, edits and deletes entries and links;
a Viewer or a Report approver reads it but is refused a write (403, nothing changed);
bad input is a form error that changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from incidents.models import Incident
from postmortems.models import IncidentLink, TimelineEntry
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def member(client: Client, role: str, name: str = "carol") -> User:
    user = User.objects.create_user(name, f"{name}@example.org", "pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return user


@pytest.fixture
def incident(db: None) -> Incident:
    return make_incident(
        product=make_product("Gmail"), start=utc(2026, 1, 1, 10), end=utc(2026, 1, 1, 11, 30)
    )


def _url(incident: Incident) -> str:
    return f"/manage/incidents/{incident.public_id}/report/timeline/"


ENTRY = {
    "at": "2026-01-01T10:20",
    "phase": "mitigation",
    "visibility": "public",
    "text": "Rolled back",
    "_save": "1",
}


def test_the_responder_adds_edits_and_deletes_an_entry(client: Client, incident: Incident) -> None:
    member(client, "Responder")
    page = client.get(_url(incident)).content.decode()
    assert "Add an entry" in page and "Impact starts: Gmail" in page and "Key durations" in page
    response = client.post(_url(incident), ENTRY)
    assert response.status_code == 302
    entry = TimelineEntry.objects.get()
    assert (entry.phase, entry.visibility, entry.text) == ("mitigation", "public", "Rolled back")
    assert entry.author is not None and entry.author.username == "carol"
    edit = client.get(_url(incident) + f"?edit={entry.pk}").content.decode()
    assert "Edit the entry" in edit and "Rolled back" in edit
    client.post(
        _url(incident), {**ENTRY, "entry_id": entry.pk, "visibility": "internal", "text": "Rolled back v2"}
    )
    entry.refresh_from_db()
    assert (entry.visibility, entry.text) == ("internal", "Rolled back v2")
    assert client.post(_url(incident), {"_delete": entry.pk}).status_code == 302
    assert not TimelineEntry.objects.exists()


def test_bad_input_is_a_form_error_that_changes_nothing(client: Client, incident: Incident) -> None:
    member(client, "Responder")
    for bad in ({"text": ""}, {"phase": "guessing"}, {"at": "2099-01-01T10:00"}, {"at": "soon"}):
        response = client.post(_url(incident), {**ENTRY, **bad})
        assert response.status_code == 400, bad
        assert 'class="field__error"' in response.content.decode()
    assert not TimelineEntry.objects.exists()


def test_viewers_and_approvers_read_but_may_not_write(client: Client, incident: Incident) -> None:
    for name, role in (("vic", "Viewer"), ("amy", "Report approver")):
        member(client, role, name)
        page = client.get(_url(incident))
        assert page.status_code == 200 and "Add an entry" not in page.content.decode()
        refused = client.post(_url(incident), ENTRY)
        assert refused.status_code == 403
    assert not TimelineEntry.objects.exists()


def test_the_responder_links_incidents_and_sees_clear_errors(client: Client, incident: Incident) -> None:
    member(client, "Responder")
    earlier = make_incident(title="Earlier outage", start=utc(2025, 12, 1, 10), end=utc(2025, 12, 1, 11))
    link = {"_link": "1", "kind": "recurrence_of", "other": earlier.public_id}
    assert client.post(_url(incident), link).status_code == 302
    assert IncidentLink.objects.filter(
        from_incident=incident, to_incident=earlier, kind="recurrence_of"
    ).exists()
    again = client.post(_url(incident), link)
    assert again.status_code == 400 and "These incidents are already linked." in again.content.decode()
    itself = client.post(_url(incident), {**link, "other": incident.public_id})
    assert "An incident cannot be linked to itself." in itself.content.decode()
    unknown = client.post(_url(incident), {**link, "other": "zzzzzzzzzzzz"})
    assert "No incident has this id." in unknown.content.decode()
    assert IncidentLink.objects.count() == 1
    page = client.get(_url(earlier)).content.decode()
    assert "Recurred as" in page
    assert client.post(_url(incident), {"_unlink": IncidentLink.objects.get().pk}).status_code == 302
    assert not IncidentLink.objects.exists()


def test_the_report_screen_links_to_the_editor(client: Client, incident: Incident) -> None:
    member(client, "Responder")
    html = client.get(f"/manage/incidents/{incident.public_id}/report/").content.decode()
    assert f'href="{_url(incident)}"' in html
