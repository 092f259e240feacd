"""The console by role: a staff account with no role, refusals, and only the allowed buttons."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from core.roles import ROLES
from incidents import services
from incidents.models import Incident
from tests.builders import approve_report, make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def member(client: Client, role: str | None, name: str = "carol") -> User:
    user = User.objects.create_user(name, f"{name}@example.org", "pw", is_staff=True)
    if role is not None:
        user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return user


def test_a_staff_user_with_no_role_is_told_whom_to_ask(client: Client, alice: User) -> None:
    member(client, None)
    for path in ("/manage/", "/manage/declare/", "/manage/templates/"):
        response = client.get(path)
        assert response.status_code == 403
        html = response.content.decode()
        assert "no role in the console" in html
        assert "<strong>alice</strong>" in html  # a superuser can give one
    assert client.get("/manage/insights/").status_code == 403


def test_a_refused_post_is_a_403_with_the_message_and_changes_nothing(client: Client) -> None:
    member(client, "Viewer")
    response = client.post(
        "/manage/declare/",
        {"title": "Outage", "status": "investigating", "impact": "minor", "body": "x", "_publish": "1"},
    )
    assert response.status_code == 403
    assert "Your role does not allow you to declare incidents." in response.content.decode()
    assert not Incident.objects.exists()


def test_a_viewer_sees_no_action_buttons(client: Client) -> None:
    product = make_product("Gmail")
    ongoing = make_incident(title="Ongoing", product=product, start=utc(2026, 1, 1, 10))
    make_incident(title="Drafted", start=utc(2026, 1, 1, 10), is_public=False)
    member(client, "Viewer")
    now = client.get("/manage/").content.decode()
    page = client.get(f"/manage/incidents/{ongoing.public_id}/").content.decode()
    for html in (now, page):
        assert "/manage/declare/" not in html
        assert "/update/" not in html
        assert "/publish/" not in html
        assert "/manage/credits/" not in html  # no finance action
        assert "/api/keys/" not in html
        assert "/manage/insights/" in html


def test_a_responder_sees_the_incident_buttons_but_not_credits(client: Client) -> None:
    product = make_product("Gmail")
    ongoing = make_incident(title="Ongoing", product=product, start=utc(2026, 1, 1, 10))
    member(client, "Responder")
    html = client.get(f"/manage/incidents/{ongoing.public_id}/").content.decode()
    assert f"/manage/incidents/{ongoing.public_id}/update/" in html
    assert "?resolve=1" in html and "/manage/declare/" in html
    assert "/manage/credits/" not in html


def test_an_approver_publishes_the_report_as_it_stands(client: Client) -> None:
    incident = make_incident(
        title="Over", product=make_product("Gmail"), start=utc(2026, 1, 1, 10), end=utc(2026, 1, 1, 11)
    )
    services.report_save(incident=incident, summary="Routers ran out of headroom.")
    approve_report(incident)  # reviewed first (ADR 0021)
    member(client, "Report approver")
    url = f"/manage/incidents/{incident.public_id}/report/"
    html = client.get(url).content.decode()
    assert 'name="summary"' not in html and 'name="_publish"' in html
    response = client.post(url, {"_publish": "1", "summary": "Rewritten by the approver."})
    assert response.status_code == 302
    incident.refresh_from_db()
    assert incident.status == "postmortem"
    assert incident.report.summary == "Routers ran out of headroom."
    # Saving is a write the approver's role does not have.
    assert (
        client.post(
            url,
            {
                "_save": "1",
                "kind": "full",
                "summary": "x",
                "items-TOTAL_FORMS": "0",
                "items-INITIAL_FORMS": "0",
            },
        ).status_code
        == 403
    )


def test_the_readme_lists_each_role_as_core_roles_does() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for role, actions in ROLES.items():
        row = re.search(rf"^\| {role} \(.*$", readme, re.MULTILINE)
        assert row is not None, role
        if role != "Administrator":
            assert set(re.findall(r"`([a-z_]+\.[a-z_]+)`", row.group())) == set(actions), role
