"""One write path per action (docs/adr/0009-one-write-path.md): every interface that
writes an incident reaches the same service, the double-declare race is closed by the
database, and one field list describes an action item."""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection, connections
from django.test import Client, TestCase
from django.utils import timezone

from api.serializers import ActionItemCreateSerializer, ActionItemSerializer
from console.report_forms import ActionItemForm
from incidents import services
from incidents.models import ActionItem, DeclareGuard, ImpactWindow, Incident, IncidentReport
from incidents.services.guards import title_key
from tests.api.keys import key_for
from tests.builders import approve_report, make_incident, make_product, utc
from tests.incidents.test_admin import form_data, split

Level = ImpactWindow.Level
T0 = utc(2026, 11, 30, 18, 0)


# --- One field list for action items ------------------------------------------------------------


def test_it_describes_an_action_item_with_one_field_list() -> None:
    fields = list(ActionItem.FIELDS)
    create = inspect.signature(services.action_item_create).parameters
    # `reason` is no field of the item: it goes to the item's history (postmortems).
    assert [name for name in create if name not in ("incident", "actor", "reason")] == fields
    assert ActionItemSerializer.Meta.fields == ["id", "incident", *fields, "created_at", "updated_at"]
    assert list(ActionItemCreateSerializer().fields) == ["incident", *(f for f in fields if f != "status")]
    assert list(ActionItemForm().fields) == ["item_id", *ActionItem.ROW_FIELDS, "reason"]
    assert list(ActionItem.ROW_FIELDS) == [f for f in fields if f != "description"]


# --- Every interface reaches the same service ---------------------------------------------------


@contextmanager
def spy(name: str) -> Iterator[mock.MagicMock]:
    """Wrap a service where interfaces reach it: the `incidents.services` package and the
    module it lives in (services of the same module call it by its plain name)."""
    original = getattr(services, name)
    home = inspect.getmodule(original)
    wrapper = mock.MagicMock(wraps=original)
    with mock.patch.object(services, name, wrapper), mock.patch.object(home, name, wrapper):
        yield wrapper


def _post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


def _api(api: Client, method: str, url: str, body: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(api, method)(url, data=json.dumps(body), content_type="application/json")


@pytest.fixture
def api(alice: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key_for(alice)}")


@pytest.fixture
def gmail(db: None) -> Any:
    return make_product("Gmail")


def _open_incident(gmail: Any, title: str = "Gmail errors") -> Incident:
    return services.incident_open(
        title=title,
        started_at=T0,
        body="Investigating.",
        windows=[services.WindowSpec(product=gmail, level=Level.MAJOR_OUTAGE, started_at=T0)],
    )


def _console_update(client: Client, incident: Incident, **data: str) -> Any:
    url = f"/manage/incidents/{incident.public_id}/update/"
    form = client.get(url).context["form"]
    levels = {f.name: f.initial for _, f in form.targets}
    if data.get("status") == "resolved":
        levels = dict.fromkeys(levels, "operational")  # resolving ends every impact
    return _post(client, url, {"display_at": "", "impact": "", "add_level": "", **levels, **data})


def _report(**extra: str) -> dict[str, str]:
    return {
        "kind": "mini",
        "summary": "Gmail failed.",
        "root_cause": "",
        "remediation": "",
        "impact_description": "",
        "items-TOTAL_FORMS": "0",
        "items-INITIAL_FORMS": "0",
        **extra,
    }


@pytest.mark.django_db
def test_console_admin_and_api_open_incidents_through_incident_open(
    staff_client: Client, api: Client, gmail: Any
) -> None:
    with spy("incident_open") as incident_open, spy("incident_declare") as incident_declare:
        declare = {
            "title": "From the console",
            "status": "investigating",
            "started_at": "",
            f"level_{gmail.pk}_0": Level.MAJOR_OUTAGE,
            "impact": "",
            "body": "Investigating.",
            "_publish": "1",
        }
        assert _post(staff_client, "/manage/declare/", declare).status_code == 302
        admin = form_data(staff_client.get("/admin/incidents/incident/add/"), "incident_form")
        admin.update(
            {"title": "From the admin", "kind": "incident", "impact": "minor", **split("started_at", T0)}
        )
        assert _post(staff_client, "/admin/incidents/incident/add/", admin).status_code == 302
        body = {
            "title": "From the API",
            "windows": [{"product": "gmail", "level": "major_outage", "started_at": "2026-11-30T18:00:00Z"}],
        }
        assert _api(api, "post", "/api/v1/incidents/", body).status_code == 201
    titles = [c.kwargs["title"] for c in incident_open.call_args_list]
    assert titles == ["From the console", "From the admin", "From the API"]
    # The people's forms go through the double-submit guard; the API has Idempotency-Key.
    assert [c.kwargs["title"] for c in incident_declare.call_args_list] == [
        "From the console",
        "From the admin",
    ]


@pytest.mark.django_db
def test_console_and_api_post_updates_and_resolve_through_the_same_services(
    staff_client: Client, api: Client, gmail: Any
) -> None:
    incident = _open_incident(gmail)
    with spy("incident_post_update_with_levels") as post_update, spy("incident_resolve") as resolve:
        assert _console_update(staff_client, incident, status="identified", body="Found.").status_code == 302
        url = f"/api/v1/incidents/{incident.public_id}/"
        assert (
            _api(api, "post", url + "updates/", {"status": "monitoring", "body": "Fixing."}).status_code
            == 201
        )
        assert post_update.call_count == 2
        assert _console_update(staff_client, incident, status="resolved", body="Fixed.").status_code == 302
        other = _open_incident(gmail, "Gmail errors again")
        response = _api(api, "post", f"/api/v1/incidents/{other.public_id}/resolve/", {"body": "Fixed."})
        assert response.status_code == 200
    assert [c.kwargs["incident"].pk for c in resolve.call_args_list] == [incident.pk, other.pk]


@pytest.mark.django_db
def test_admin_and_api_edit_through_incident_edit(staff_client: Client, api: Client, gmail: Any) -> None:
    incident = _open_incident(gmail)
    change = f"/admin/incidents/incident/{incident.pk}/change/"
    with spy("incident_edit") as incident_edit:
        data = {**form_data(staff_client.get(change), "incident_form"), "title": "Renamed in the admin"}
        assert _post(staff_client, change, data).status_code == 302
        url = f"/api/v1/incidents/{incident.public_id}/"
        assert _api(api, "patch", url, {"title": "Renamed by the API"}).status_code == 200
    assert [c.kwargs["changes"]["title"] for c in incident_edit.call_args_list] == [
        "Renamed in the admin",
        "Renamed by the API",
    ]


@pytest.mark.django_db
def test_console_admin_and_api_write_and_publish_reports_through_the_same_services(
    staff_client: Client, api: Client, gmail: Any
) -> None:
    first = make_incident(product=gmail, start=T0, end=T0 + timedelta(hours=1))
    second = make_incident(title="Drive errors", product=gmail, start=T0, end=T0 + timedelta(hours=1))
    with spy("report_save") as report_save, spy("report_publish") as report_publish:
        console = f"/manage/incidents/{first.public_id}/report/"
        assert _post(staff_client, console, _report(_save="1")).status_code == 302
        change = f"/admin/incidents/incident/{first.pk}/change/"
        data = {**form_data(staff_client.get(change), "incident_form"), "report-0-root_cause": "A push."}
        assert _post(staff_client, change, data).status_code == 302
        url = f"/api/v1/incidents/{second.public_id}/report/"
        assert _api(api, "put", url, {"kind": "mini", "summary": "Drive failed."}).status_code == 200
        assert report_save.call_count == 3
        # Reviewed and approved, then published by an approver who is not the author.
        approve_report(first)
        approve_report(second)
        carol = User.objects.create_user("carol", "carol@example.org", "x", is_staff=True, is_superuser=True)
        approver = Client()
        approver.force_login(carol)
        approver_api = Client(HTTP_AUTHORIZATION=f"Token {key_for(carol)}")
        published = _post(approver, console, _report(_publish="1", root_cause="A push."))
        assert published.status_code == 302
        assert _api(approver_api, "post", url + "publish/", {}).status_code == 200
    assert [c.kwargs["incident"].pk for c in report_publish.call_args_list] == [first.pk, second.pk]
    assert IncidentReport.objects.filter(status=IncidentReport.Status.PUBLISHED).count() == 2


@pytest.mark.django_db
def test_the_console_publishes_a_draft_through_incident_publish(staff_client: Client, gmail: Any) -> None:
    draft = services.incident_open(title="Draft", is_public=False)
    with spy("incident_publish") as incident_publish:
        assert _post(staff_client, f"/manage/incidents/{draft.public_id}/publish/", {}).status_code == 302
    assert incident_publish.call_count == 1


# --- The double-declare race, closed by the database ----------------------------------------------


@pytest.mark.django_db
def test_it_refuses_the_same_title_declared_again_within_the_window(gmail: Any) -> None:
    services.incident_declare(title="Gmail  errors", body="x")
    with pytest.raises(ValidationError, match="it was not declared twice"):
        services.incident_declare(title="gmail errors", body="x")
    guard = DeclareGuard.objects.get(key=title_key("GMAIL ERRORS"))
    guard.declared_at = timezone.now() - timedelta(minutes=11)
    guard.save()
    services.incident_declare(title="gmail errors", body="x")  # later, it is news again
    assert Incident.objects.count() == 2


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def _wait_until(condition: Callable[[], bool], *, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.usefixtures("postgres")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("earlier_declare", [False, True], ids=["first-declare", "guard-row-exists"])
def test_two_simultaneous_declares_file_one_incident(earlier_declare: bool) -> None:
    title = "Simultaneous outage"
    if earlier_declare:  # the row exists: both declares queue on its row lock
        DeclareGuard.objects.create(key=title_key(title), declared_at=timezone.now() - timedelta(days=1))
    first_inside = threading.Event()
    release_first = threading.Event()
    outcomes: dict[str, Any] = {}
    real_open = services.incident_open

    def held_open(**kwargs: Any) -> Incident:
        # The first declare holds its transaction open (guard taken, incident not yet
        # committed) until the second is seen waiting on the database.
        if threading.current_thread().name == "first":
            first_inside.set()
            assert release_first.wait(30)
        return real_open(**kwargs)

    def declare(name: str) -> None:
        try:
            outcomes[name] = services.incident_declare(title=title, body="Investigating.", notify=False)
        except ValidationError as exc:
            outcomes[name] = exc
        finally:
            connections.close_all()

    with mock.patch("incidents.services.incidents.incident_open", held_open):
        first = threading.Thread(target=declare, args=("first",), name="first")
        second = threading.Thread(target=declare, args=("second",), name="second")
        first.start()
        assert first_inside.wait(30)
        second.start()
        try:
            _wait_until(lambda: _waiting_on_a_lock() >= 1)  # the second waits for the first's lock
        finally:
            release_first.set()
            first.join(30)
            second.join(30)

    assert isinstance(outcomes["first"], Incident)
    assert isinstance(outcomes["second"], ValidationError)
    assert "it was not declared twice" in " ".join(outcomes["second"].messages)
    assert outcomes["first"].public_id in " ".join(outcomes["second"].messages)
    assert Incident.objects.filter(title=title).count() == 1
