"""The incident side of the role matrix: console pages and actions, incident API writes.

`_world` builds, once per role, an open incident, a resolved one with a written report, a
draft and a message template; each row finds them by title and acts as the member.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from console.models import MessageTemplate
from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import approve_report, make_incident, make_product, utc
from tests.roles.matrix import Row

OPEN = "Roles: open incident"
CLOSED = "Roles: resolved incident"
DRAFT = "Roles: draft incident"


def _world() -> None:
    gmail = make_product("Gmail")
    make_incident(title=OPEN, product=gmail, start=utc(2026, 1, 1, 10))
    closed = make_incident(title=CLOSED, product=gmail, start=utc(2026, 1, 1, 10), end=utc(2026, 1, 1, 11))
    services.report_save(incident=closed, summary="A summary.", root_cause="A cause.")
    approve_report(closed)  # reviewed, so the publish rows test the role alone
    make_incident(title=DRAFT, start=utc(2026, 1, 1, 10), is_public=False)
    MessageTemplate.objects.create(name="Looking", kind="update", body="We are looking into it.")


def _id(title: str) -> str:
    return Incident.objects.get(title=title).public_id


def _window_id() -> int:
    return ImpactWindow.objects.filter(incident__title=OPEN).values_list("pk", flat=True).get()


def _template_id() -> int:
    return MessageTemplate.objects.values_list("pk", flat=True).get()


def get(path: Any) -> Any:
    """A GET of `path` (a string, or a function that builds it once the world exists)."""

    def perform(client: Client, user: User) -> int:
        return client.get(path() if callable(path) else path).status_code

    return perform


def post(path: Any, data: Any = None, *, api: str = "") -> Any:
    """A POST (or, with `api`, that JSON method) of `data` (a dict or a function of nothing)."""

    def perform(client: Client, user: User) -> int:
        url = path() if callable(path) else path
        body = (data() if callable(data) else data) or {}
        if api:
            return client.generic(api, url, json.dumps(body), content_type="application/json").status_code
        return client.post(url, body).status_code

    return perform


def _declare() -> dict[str, Any]:
    return {"title": "Roles: declared", "status": "investigating", "started_at": "", "impact": "minor"}


def _declare_form() -> dict[str, Any]:
    return {**_declare(), "body": "Looking into it.", "notify": "on", "_publish": "1"}


def _update_form(status: str) -> dict[str, Any]:
    return {
        "status": status,
        "body": f"Now {status}.",
        "display_at": "",
        "impact": "",
        "add_level": "",
        "_post": "1",
    }


def _internal_form() -> dict[str, Any]:
    window = ImpactWindow.objects.select_related("product").get(incident__title=OPEN)
    return {
        **_update_form("investigating"),
        "kind": "internal",
        "body": "",
        "note": "Failover done.",
        f"level_{window.product_id}_0": "degraded_performance",
    }


def _update_path(title: str, suffix: str = "", *, api: bool = False) -> str:
    update = Incident.objects.get(title=title).updates.order_by("id").first()
    assert update is not None
    base = "/api/v1/incidents" if api else "/manage/incidents"
    return f"{base}/{update.incident.public_id}/updates/{update.pk}/{suffix}"


def _report_form(**extra: str) -> dict[str, Any]:
    return {
        "kind": "full",
        "summary": "A summary.",
        "root_cause": "A cause.",
        "remediation": "",
        "impact_description": "",
        "items-TOTAL_FORMS": "0",
        "items-INITIAL_FORMS": "0",
        **extra,
    }


def _template_form() -> dict[str, Any]:
    return {"name": "Fixed", "kind": "update", "title": "", "status": "", "body": "Fixed."}


def _incident_path(title: str, suffix: str = "") -> Any:
    return lambda: f"/manage/incidents/{_id(title)}/{suffix}"


def _api(title: str, suffix: str = "") -> Any:
    return lambda: f"/api/v1/incidents/{_id(title)}/{suffix}"


def _api_window(suffix: str = "") -> Any:
    return lambda: f"/api/v1/incidents/{_id(OPEN)}/windows/{_window_id()}/{suffix}"


_PAGES = [
    ("/manage/", "/manage/"),
    ("/manage/incidents/<id>/", _incident_path(OPEN)),
    ("/manage/incidents/<id>/ (draft)", _incident_path(DRAFT)),
    ("/manage/incidents/<id>/report/", _incident_path(CLOSED, "report/")),
    ("/manage/templates/", "/manage/templates/"),
    ("/manage/insights/", "/manage/insights/"),
    ("/manage/insights/<panel>.csv", "/manage/insights/incidents.csv"),
]

ROWS: list[Row] = [
    *[
        Row("console.view", "console", f"GET {name}", get(path), ok=(200,), setup=_world)
        for name, path in _PAGES
    ],
    Row(
        "console.view", "console", "POST /manage/preview/", post("/manage/preview/", {"body": "x"}), ok=(200,)
    ),
    # Declare, update, resolve, publish a draft.
    Row("incident.declare", "console", "GET /manage/declare/", get("/manage/declare/"), ok=(200,)),
    Row("incident.declare", "console", "POST /manage/declare/", post("/manage/declare/", _declare_form)),
    Row(
        "incident.update",
        "console",
        "GET /manage/incidents/<id>/update/",
        get(_incident_path(OPEN, "update/")),
        ok=(200,),
        setup=_world,
    ),
    Row(
        "incident.update",
        "console",
        "POST /manage/incidents/<id>/update/",
        post(_incident_path(OPEN, "update/"), lambda: _update_form("identified")),
        setup=_world,
    ),
    Row(
        "incident.resolve",
        "console",
        "GET /manage/incidents/<id>/update/?resolve=1",
        get(lambda: f"/manage/incidents/{_id(OPEN)}/update/?resolve=1"),
        ok=(200,),
        setup=_world,
    ),
    Row(
        "incident.resolve",
        "console",
        "POST /manage/incidents/<id>/update/ (resolved)",
        post(_incident_path(OPEN, "update/"), lambda: _update_form("resolved")),
        setup=_world,
    ),
    Row(
        "incident.update",
        "console",
        "POST /manage/incidents/<id>/update/ (internal level change)",
        post(_incident_path(OPEN, "update/"), lambda: _internal_form()),
        setup=_world,
    ),
    Row(
        "incident.update",
        "console",
        "GET /manage/incidents/<id>/updates/<pk>/edit/",
        get(lambda: _update_path(OPEN, "edit/")),
        ok=(200,),
        setup=_world,
    ),
    Row(
        "incident.update",
        "console",
        "POST /manage/incidents/<id>/updates/<pk>/edit/",
        post(lambda: _update_path(OPEN, "edit/"), {"body": "Corrected.", "_save": "1"}),
        setup=_world,
    ),
    Row(
        "incident.publish_draft",
        "console",
        "POST /manage/incidents/<id>/publish/",
        post(_incident_path(DRAFT, "publish/")),
        setup=_world,
    ),
    # The report: write (with action items), publish.
    Row(
        "report.write",
        "console",
        "POST /manage/incidents/<id>/report/ (save)",
        post(_incident_path(CLOSED, "report/"), lambda: _report_form(_save="1")),
        setup=_world,
    ),
    Row(
        "report.publish",
        "console",
        "POST /manage/incidents/<id>/report/ (publish)",
        post(_incident_path(CLOSED, "report/"), lambda: _report_form(_publish="1")),
        setup=_world,
    ),
    # Message templates.
    Row("template.write", "console", "GET /manage/templates/new/", get("/manage/templates/new/"), ok=(200,)),
    Row(
        "template.write",
        "console",
        "POST /manage/templates/new/",
        post("/manage/templates/new/", _template_form),
    ),
    Row(
        "template.write",
        "console",
        "POST /manage/templates/<pk>/",
        post(lambda: f"/manage/templates/{_template_id()}/", _template_form),
        setup=_world,
    ),
    Row(
        "template.write",
        "console",
        "POST /manage/templates/<pk>/delete/",
        post(lambda: f"/manage/templates/{_template_id()}/delete/"),
        setup=_world,
    ),
    # The API (a signed-in staff session; API keys act as their owner, through the same checks).
    Row(
        "incident.declare",
        "api",
        "POST /api/v1/incidents/",
        post("/api/v1/incidents/", {"title": "Roles: declared", "body": "Looking."}, api="POST"),
    ),
    Row(
        "incident.declare",
        "api",
        "POST /api/v1/maintenance/",
        post(
            "/api/v1/maintenance/",
            {
                "title": "Roles: maintenance",
                "scheduled_for": "2030-01-01T10:00:00Z",
                "scheduled_until": "2030-01-01T11:00:00Z",
            },
            api="POST",
        ),
    ),
    Row(
        "incident.update",
        "api",
        "POST /api/v1/incidents/<id>/updates/",
        post(_api(OPEN, "updates/"), {"status": "identified", "body": "Found it."}, api="POST"),
        setup=_world,
    ),
    Row(
        "incident.resolve",
        "api",
        "POST /api/v1/incidents/<id>/resolve/",
        post(_api(OPEN, "resolve/"), {"body": "Fixed."}, api="POST"),
        setup=_world,
    ),
    Row(
        "incident.resolve",
        "api",
        "POST /api/v1/incidents/<id>/updates/ (resolved)",
        post(_api(OPEN, "updates/"), {"status": "resolved", "body": "Fixed."}, api="POST"),
        setup=_world,
    ),
    Row(
        "incident.update",
        "api",
        "PATCH /api/v1/incidents/<id>/updates/<pk>/",
        post(lambda: _update_path(OPEN, api=True), {"body": "Corrected."}, api="PATCH"),
        setup=_world,
    ),
    Row(
        "incident.edit",
        "api",
        "PATCH /api/v1/incidents/<id>/",
        post(_api(OPEN), {"title": "Roles: renamed"}, api="PATCH"),
        setup=_world,
    ),
    Row(
        "incident.edit",
        "api",
        "POST /api/v1/incidents/<id>/windows/",
        post(
            _api(OPEN, "windows/"),
            {"product": "gmail", "level": "degraded_performance", "started_at": "2026-01-01T10:30:00Z"},
            api="POST",
        ),
        setup=_world,
    ),
    Row(
        "incident.edit",
        "api",
        "PATCH /api/v1/incidents/<id>/windows/<id>/",
        post(_api_window(), {"level": "partial_outage"}, api="PATCH"),
        setup=_world,
    ),
    Row(
        "incident.edit",
        "api",
        "POST /api/v1/incidents/<id>/windows/<id>/end/",
        post(_api_window("end/"), {}, api="POST"),
        setup=_world,
    ),
    Row(
        "incident.edit",
        "api",
        "DELETE /api/v1/incidents/<id>/windows/<id>/",
        post(_api_window(), None, api="DELETE"),
        setup=_world,
    ),
    Row(
        "report.write",
        "api",
        "PUT /api/v1/incidents/<id>/report/",
        post(_api(CLOSED, "report/"), {"summary": "Rewritten."}, api="PUT"),
        setup=_world,
    ),
    Row(
        "report.publish",
        "api",
        "POST /api/v1/incidents/<id>/report/publish/",
        post(_api(CLOSED, "report/publish/"), {}, api="POST"),
        setup=_world,
    ),
    Row(
        "report.write",
        "api",
        "POST /api/v1/action-items/",
        post("/api/v1/action-items/", lambda: {"incident": _id(CLOSED), "title": "Add a canary"}, api="POST"),
        setup=_world,
    ),
]
