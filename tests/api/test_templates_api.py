"""Message templates through /api/v1/templates/ (issue 31): staff only, written through the
console's service with its permission (`template.write`), If-Match on changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from console.models import MessageTemplate as ConsoleTemplate
from incidents.message_templates import MessageTemplate
from tests.api.catalogue_helpers import client_for, send
from tests.api.test_v1 import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def template(db: None) -> MessageTemplate:
    return MessageTemplate.objects.create(
        name="Looking", kind="update", status="investigating", body="We are looking."
    )


def test_staff_manage_templates(staff_api: Client, template: MessageTemplate) -> None:
    assert ConsoleTemplate is MessageTemplate  # the console's page shows the same rows
    created = send(
        staff_api,
        "post",
        "/api/v1/templates/",
        {"name": "Outage", "kind": "incident", "title": "Service unavailable", "body": "We are on it."},
    )
    assert created.status_code == 201, created.content
    url = created["Location"]
    assert created.json()["status"] == ""
    etag = staff_api.get(url)["ETag"]
    changed = send(staff_api, "patch", url, {"status": "identified"}, **{"If-Match": etag})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["status"], changed.json()["title"]) == ("identified", "Service unavailable")
    assert_error(
        send(staff_api, "patch", url, {"body": "x"}, **{"If-Match": etag}), 412, "precondition_failed"
    )
    names = [t["name"] for t in staff_api.get("/api/v1/templates/").json()["results"]]
    assert names == ["Outage", "Looking"]  # by kind, then name
    assert send(staff_api, "delete", url).status_code == 204
    assert list(MessageTemplate.objects.values_list("name", flat=True)) == ["Looking"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": "Outage", "kind": "incident", "body": "x"}, "title"),  # an incident template needs one
        ({"name": "looking", "kind": "update", "body": "x"}, "name"),  # taken, whatever the case
        ({"name": "New", "kind": "note", "body": "x"}, "kind"),
        ({"name": "New", "kind": "update", "body": "   "}, "body"),
        ({"name": "New", "kind": "update", "body": "x", "status": "broken"}, "status"),
        ({"name": "New", "kind": "update", "body": "x", "colour": "red"}, "colour"),
    ],
)
def test_bad_template_input_names_the_field(
    staff_api: Client, template: MessageTemplate, payload: dict[str, Any], field: str
) -> None:
    response = send(staff_api, "post", "/api/v1/templates/", payload)
    assert field in assert_error(response, 400, "invalid")["errors"], response.json()
    assert MessageTemplate.objects.count() == 1


def test_templates_are_for_staff_who_may_write_them(
    template: MessageTemplate, alice: User, bob: User, anon: Client
) -> None:
    url = f"/api/v1/templates/{template.pk}/"
    assert anon.get(url).status_code == 401
    assert_error(client_for(bob).get(url), 403, "permission_denied")
    assert client_for(alice, "read").get(url).status_code == 200
    assert_error(send(client_for(alice, "read"), "patch", url, {"body": "x"}), 403, "permission_denied")
    viewer = User.objects.create_user("vera", "vera@example.org", "x", is_staff=True)
    viewer.groups.add(Group.objects.get(name="Viewer"))
    assert client_for(viewer).get(url).status_code == 200
    denied = assert_error(send(client_for(viewer), "delete", url), 403, "permission_denied")
    assert "templates" in denied["detail"]
    template.refresh_from_db()
    assert template.body == "We are looking."
