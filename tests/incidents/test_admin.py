"""The staff side: running a whole incident from the admin, as a person in a browser would.

Forms are filled from the HTML the admin served (every input, hidden field and inline
management form a browser would send), so a test breaks when the page would.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from incidents import services
from incidents.intervals import format_duration
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport, IncidentUpdate, Location
from tests.builders import approve_report, make_group, make_incident, make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
Status = Incident.Status
T0 = utc(2026, 10, 8, 7, 0)

XSS_MARKDOWN = (
    "Fixed.\n\n<script>alert('x')</script>\n\n"
    "[click me](javascript:alert(1)) <img src=x onerror=alert(1)> "
    '<a href="#" onclick="alert(1)">a</a> [data](data:text/html;base64,PHNjcmlwdD4=)\n\n'
    "**Bold** and a [real link](https://example.org/status)."
)


# --- A browser's view of an HTML form -------------------------------------------------------


class _FormParser(HTMLParser):
    """Collects what a browser would submit for the form with the given id."""

    def __init__(self, form_id: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.data: dict[str, list[str]] = {}
        self._textarea: str | None = None
        self._select: str | None = None
        self._select_options: list[tuple[str, bool]] = []
        self._option_value: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if tag == "form" and (self.form_id is None or a.get("id") == self.form_id):
            self.inside = True
        if not self.inside:
            return
        name = a.get("name")
        if tag == "input" and name:
            kind = a.get("type", "text").lower()
            if kind in ("submit", "button", "image", "reset", "file"):
                return
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.data.setdefault(name, []).append(a.get("value") or "on")
                return
            self.data.setdefault(name, []).append(a.get("value", ""))
        elif tag == "textarea" and name:
            self._textarea = name
            self.data.setdefault(name, []).append("")
        elif tag == "select" and name:
            self._select = name
            self._select_options = []
        elif tag == "option" and self._select is not None:
            self._select_options.append((a.get("value", ""), "selected" in a))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self.data[self._textarea][-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "textarea" and self._textarea is not None:
            # Browsers drop the newline that follows <textarea>.
            value = self.data[self._textarea][-1]
            self.data[self._textarea][-1] = value[1:] if value.startswith("\n") else value
            self._textarea = None
        elif tag == "select" and self._select is not None:
            chosen = [v for v, selected in self._select_options if selected]
            if not chosen and self._select_options:
                chosen = [self._select_options[0][0]]
            self.data[self._select] = chosen
            self._select = None


def form_data(response: Any, form_id: str | None = None) -> dict[str, Any]:
    assert response.status_code == 200, response.status_code
    parser = _FormParser(form_id)
    parser.feed(response.content.decode())
    return {k: v[0] if len(v) == 1 else v for k, v in parser.data.items()}


def split(prefix: str, when: Any) -> dict[str, str]:
    """The admin's split date/time widget, as typed."""
    if when is None:
        return {f"{prefix}_0": "", f"{prefix}_1": ""}
    return {f"{prefix}_0": when.strftime("%Y-%m-%d"), f"{prefix}_1": when.strftime("%H:%M:%S")}


def fragment(html: str, start_marker: str, end_marker: str) -> str:
    start = html.index(start_marker)
    return html[start : html.index(end_marker, start)]


class _TagAudit(HTMLParser):
    """Every real tag and attribute of a fragment (escaped text is not a tag)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k.lower(): (v or "") for k, v in attrs}))


def assert_nothing_executable(html: str) -> None:
    audit = _TagAudit()
    audit.feed(html)
    assert audit.tags, "nothing rendered"
    for tag, attrs in audit.tags:
        assert tag not in ("script", "iframe", "object", "embed", "style"), tag
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src", "action", "formaction"):
            value = re.sub(r"\s", "", attrs.get(name, "")).lower()
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)


def incident_url(name: str, incident: Incident) -> str:
    return reverse(f"admin:incidents_incident_{name}", args=[incident.pk])


ADD_URL = "/admin/incidents/incident/add/"


@pytest.fixture
def catalogue() -> dict[str, Any]:
    group = make_group("Cloud")
    storage = make_product("Cloud Storage", group=group)
    region = make_location("us-east1")
    zone = make_location("europe-west1-b", kind=Location.Kind.ZONE, parent=make_location("europe-west1"))
    return {"storage": storage, "region": region, "zone": zone}


def add_form_with_two_windows(client: Any, catalogue: dict[str, Any]) -> dict[str, Any]:
    data = form_data(client.get(ADD_URL), "incident_form")
    data.update(
        {
            "title": "Elevated errors writing objects",
            "kind": "incident",
            "status": "",
            "impact": "major",
            "is_public": "on",
            "summary": "Writes to Cloud Storage fail in two places.",
            "body": "We are **investigating** write errors.",
            "notify": "on",
            **split("started_at", T0),
            **split("detected_at", T0 + timedelta(minutes=9)),
            "windows-TOTAL_FORMS": "2",
            "windows-0-product": str(catalogue["storage"].pk),
            "windows-0-location": str(catalogue["region"].pk),
            "windows-0-level": Level.MAJOR_OUTAGE,
            **split("windows-0-started_at", T0),
            **split("windows-0-ended_at", None),
            "windows-0-description": "Uploads returned 503.",
            "windows-1-product": str(catalogue["storage"].pk),
            "windows-1-location": str(catalogue["zone"].pk),
            "windows-1-level": Level.PARTIAL_OUTAGE,
            **split("windows-1-started_at", T0 + timedelta(minutes=30)),
            **split("windows-1-ended_at", None),
            "windows-1-description": "",
        }
    )
    return data


# --- The whole incident, end to end ---------------------------------------------------------


def test_it_runs_an_incident_end_to_end(staff_client: Any, alice: Any, catalogue: dict[str, Any]) -> None:
    # 1. File the incident with two windows in two locations.
    response = staff_client.post(ADD_URL, add_form_with_two_windows(staff_client, catalogue))
    assert response.status_code == 302, response.context and response.context["errors"]
    incident = Incident.objects.get()
    assert incident.title == "Elevated errors writing objects"
    assert incident.status == Status.INVESTIGATING
    assert incident.created_by == alice
    assert incident.started_at == T0
    windows = list(incident.windows.order_by("started_at"))
    assert [(w.location, w.level, w.ended_at) for w in windows] == [
        (catalogue["region"], Level.MAJOR_OUTAGE, None),
        (catalogue["zone"], Level.PARTIAL_OUTAGE, None),
    ]
    assert incident.updates.get().body == "We are **investigating** write errors."
    assert LogEntry.objects.filter(object_id=str(incident.pk)).count() == 1

    # The change page links to the incident's console page, where updates are written.
    page = staff_client.get(incident_url("change", incident)).content.decode()
    assert f'href="/manage/incidents/{incident.public_id}/"' in page
    assert "post-update/" not in page and "resolve/" not in page

    # 2-3. Updates and the resolution come from the console (tests/console).
    services.incident_post_update(incident=incident, status="identified", body="Cause *found*.")
    services.incident_resolve(incident=incident, body="Writes succeed again.")

    # 4. Write the report on the incident page.
    data = form_data(staff_client.get(incident_url("change", incident)), "incident_form")
    data.update(
        {
            "report-0-kind": "full",
            "report-0-status": "in_review",
            "report-0-summary": "Writes failed for 2 hours. " + XSS_MARKDOWN,
            "report-0-root_cause": "A bad configuration push.",
            "report-0-remediation": "- Canary config pushes\n- Alert on write errors",
            "report-0-impact_description": "Uploads in **us-east1** failed.",
        }
    )
    response = staff_client.post(incident_url("change", incident), data)
    assert response.status_code == 302
    report = IncidentReport.objects.get(incident=incident)
    assert report.status == IncidentReport.Status.IN_REVIEW
    assert report.root_cause == "A bad configuration push."
    assert incident.windows.count() == 2  # the untouched inline rows were not re-saved

    # 5. Published from the console.
    approve_report(incident)
    services.report_publish(incident=incident)
    report.refresh_from_db()
    assert report.is_published

    # 6. A typo fixed after publishing: the report stays published.
    data = form_data(staff_client.get(incident_url("change", incident)), "incident_form")
    assert "report-0-status" not in data
    data["report-0-root_cause"] = "A bad configuration push to the load balancer."
    assert staff_client.post(incident_url("change", incident), data).status_code == 302
    report.refresh_from_db()
    assert report.root_cause == "A bad configuration push to the load balancer."
    assert report.is_published


# --- Validation errors show and save nothing ---------------------------------------------------


def test_it_refuses_a_window_ending_before_it_starts_when_filing(
    staff_client: Any, catalogue: dict[str, Any]
) -> None:
    data = add_form_with_two_windows(staff_client, catalogue)
    data.update(split("windows-1-ended_at", T0))  # window 1 starts at T0 + 30 min
    response = staff_client.post(ADD_URL, data)
    assert response.status_code == 200
    assert "The end must not be before the start." in response.content.decode()
    assert not Incident.objects.exists()
    assert not ImpactWindow.objects.exists()
    assert not IncidentUpdate.objects.exists()


def test_it_refuses_a_window_ending_before_it_starts_when_editing(
    staff_client: Any, catalogue: dict[str, Any]
) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0, location=catalogue["region"])
    data = form_data(staff_client.get(incident_url("change", incident)), "incident_form")
    data.update({"title": "A new title", **split("windows-0-ended_at", T0 - timedelta(hours=1))})
    response = staff_client.post(incident_url("change", incident), data)
    assert response.status_code == 200
    assert "The end must not be before the start." in response.content.decode()
    incident.refresh_from_db()
    assert incident.title == "Gmail web interface unavailable"
    assert incident.windows.get().ended_at is None


def test_it_shows_a_service_refusal_and_rolls_back_earlier_writes(
    staff_client: Any, catalogue: dict[str, Any]
) -> None:
    """The forms accept it, a service refuses it: nothing of the request may remain."""
    incident = make_incident(product=catalogue["storage"], start=T0)
    data = form_data(staff_client.get(incident_url("change", incident)), "incident_form")
    data.update(
        {
            "title": "Renamed incident",
            # A valid new window (saved by a service first) ...
            "windows-1-product": str(catalogue["storage"].pk),
            "windows-1-location": str(catalogue["zone"].pk),
            "windows-1-level": Level.DEGRADED_PERFORMANCE,
            **split("windows-1-started_at", T0 + timedelta(hours=1)),
            # ... then an action item whose title smuggles a control character.
            "action_items-0-title": "Add\x0balerting",
            "action_items-0-type": "detect",
            "action_items-0-priority": "P1",
            "action_items-0-status": "open",
        }
    )
    response = staff_client.post(incident_url("change", incident), data)
    assert response.status_code == 200
    assert "Line breaks and control characters are not allowed." in response.content.decode()
    incident.refresh_from_db()
    assert incident.title == "Gmail web interface unavailable"
    assert incident.windows.count() == 1
    assert not ActionItem.objects.exists()
    assert not LogEntry.objects.exists()


def test_it_refuses_a_status_that_does_not_fit_the_kind(staff_client: Any, catalogue: dict[str, Any]) -> None:
    data = add_form_with_two_windows(staff_client, catalogue)
    data.update(
        {
            "kind": "maintenance",
            "status": "identified",
            **split("scheduled_for", T0),
            **split("scheduled_until", T0 + timedelta(hours=2)),
        }
    )
    response = staff_client.post(ADD_URL, data)
    assert response.status_code == 200
    assert "errornote" in response.content.decode()
    assert not Incident.objects.exists()
    assert not ImpactWindow.objects.exists()


def test_it_schedules_a_maintenance(staff_client: Any, catalogue: dict[str, Any]) -> None:
    data = add_form_with_two_windows(staff_client, catalogue)
    data.update(
        {
            "title": "Storage maintenance in us-east1",
            "kind": "maintenance",
            **split("started_at", None),
            **split("detected_at", None),
            **split("scheduled_for", T0),
            **split("scheduled_until", T0 + timedelta(hours=2)),
            "windows-TOTAL_FORMS": "1",
            "windows-0-level": Level.UNDER_MAINTENANCE,
        }
    )
    assert staff_client.post(ADD_URL, data).status_code == 302
    maintenance = Incident.objects.get()
    assert (maintenance.kind, maintenance.status, maintenance.started_at) == ("maintenance", "scheduled", T0)
    page = staff_client.get(incident_url("change", maintenance)).content.decode()
    assert f'href="/manage/incidents/{maintenance.public_id}/"' in page  # completed from the console


def test_it_refuses_a_double_submitted_filing(staff_client: Any, catalogue: dict[str, Any]) -> None:
    data = add_form_with_two_windows(staff_client, catalogue)
    assert staff_client.post(ADD_URL, data).status_code == 302
    again = staff_client.post(ADD_URL, data)
    assert again.status_code == 200
    assert "it was not declared twice" in again.content.decode()
    assert Incident.objects.count() == 1
    assert ImpactWindow.objects.count() == 2
    assert IncidentUpdate.objects.count() == 1
    # Another title is another incident.
    assert (
        staff_client.post(ADD_URL, {**data, "title": "Elevated latency listing buckets"}).status_code == 302
    )
    assert Incident.objects.count() == 2


# --- Markdown previews are sanitised -------------------------------------------------------------


def test_it_sanitises_the_timeline_on_the_incident_page(staff_client: Any, catalogue: dict[str, Any]) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0)
    services.incident_post_update(incident=incident, status="identified", body=XSS_MARKDOWN)
    page = staff_client.get(incident_url("change", incident)).content.decode()
    inline = fragment(page, 'id="updates-group"', 'id="report-group"')
    assert "<strong>Bold</strong>" in inline
    assert_nothing_executable(inline)


# --- Access -----------------------------------------------------------------------------------


def test_it_refuses_non_staff(client: Any, bob: Any, catalogue: dict[str, Any]) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0)
    services.report_save(incident=incident, summary="Summary.")
    client.force_login(bob)
    urls = [
        ADD_URL,
        incident_url("change", incident),
        "/admin/incidents/actionitem/",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url
    client.post(incident_url("change", incident), {"title": "Sneaky."})
    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING
    assert incident.updates.count() == 1
    assert not IncidentReport.objects.get().is_published


# --- Navigating a year of incidents ---------------------------------------------------------------


def test_it_filters_and_searches_the_incident_list(staff_client: Any, catalogue: dict[str, Any]) -> None:
    gmail = make_product("Gmail")
    storage_incident = make_incident(
        title="Storage writes failing",
        product=catalogue["storage"],
        start=utc(2026, 3, 2),
        end=utc(2026, 3, 3),
    )
    services.incident_post_update(
        incident=make_incident(title="Mail delays", product=gmail, start=utc(2026, 6, 1)),
        status="identified",
        body="A spam-filter overload slowed delivery.",
    )
    url = "/admin/incidents/incident/"

    def titles(**params: Any) -> set[str]:
        response = staff_client.get(url, params)
        assert response.status_code == 200
        return {i.title for i in response.context["cl"].result_list}

    assert titles() == {"Storage writes failing", "Mail delays"}
    assert titles(q="spam-filter") == {"Mail delays"}
    assert titles(q=storage_incident.public_id) == {"Storage writes failing"}
    assert titles(**{"windows__product__id__exact": gmail.pk}) == {"Mail delays"}
    assert titles(status__exact="resolved") == {"Storage writes failing"}
    assert titles(state="open") == {"Mail delays"}
    assert titles(started_at__year=2026, started_at__month=3) == {"Storage writes failing"}
    assert titles(report="none") == {"Storage writes failing", "Mail delays"}
    page = staff_client.get(url).content.decode()
    assert (
        "Cloud Storage" in page
        and f'<td class="field-duration">{format_duration(timedelta(days=1))}</td>' in page
    )


def test_it_closes_a_window_by_typing_its_end(staff_client: Any, catalogue: dict[str, Any]) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0)
    data = form_data(staff_client.get(incident_url("change", incident)), "incident_form")
    data.update(split("windows-0-ended_at", T0 + timedelta(hours=2)))
    assert staff_client.post(incident_url("change", incident), data).status_code == 302
    window = incident.windows.get()
    assert window.ended_at == T0 + timedelta(hours=2)
    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING  # closing one window does not resolve


# --- Action items across incidents ----------------------------------------------------------------


def test_it_filters_action_items_by_overdue_status_priority_and_type(
    staff_client: Any, catalogue: dict[str, Any]
) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0)
    today = timezone.localdate()
    late = services.action_item_create(
        incident=incident,
        title="Canary config pushes",
        priority="P0",
        type="prevent",
        due_date=today - timedelta(days=3),
    )
    done_late = services.action_item_create(
        incident=incident,
        title="Write runbook",
        priority="P2",
        type="process",
        due_date=today - timedelta(days=3),
    )
    services.action_item_edit(item=done_late, changes={"status": "done"})
    services.action_item_create(
        incident=incident,
        title="Alert on write errors",
        priority="P1",
        type="detect",
        due_date=today + timedelta(days=30),
    )
    url = "/admin/incidents/actionitem/"

    def titles(**params: Any) -> set[str]:
        response = staff_client.get(url, params)
        assert response.status_code == 200
        return {i.title for i in response.context["cl"].result_list}

    assert titles(due="overdue") == {late.title}
    assert titles(status__exact="done") == {"Write runbook"}
    assert titles(priority__exact="P1") == {"Alert on write errors"}
    assert titles(type__exact="prevent") == {"Canary config pushes"}

    staff_client.post(url, {"action": "mark_done", "_selected_action": [str(late.pk)]})
    late.refresh_from_db()
    assert late.status == ActionItem.Status.DONE
    assert titles(due="overdue") == set()


def test_it_adds_action_items_from_the_incident_page(
    staff_client: Any, alice: Any, catalogue: dict[str, Any]
) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0)
    data = form_data(staff_client.get(incident_url("change", incident)), "incident_form")
    data.update(
        {
            "action_items-0-title": "Alert on write error rate",
            "action_items-0-type": "detect",
            "action_items-0-priority": "P1",
            "action_items-0-status": "in_progress",
            "action_items-0-owner": str(alice.pk),
            "action_items-0-due_date": "2026-12-01",
            "action_items-0-is_public": "on",
        }
    )
    assert staff_client.post(incident_url("change", incident), data).status_code == 302
    item = ActionItem.objects.get()
    assert (item.title, item.status, item.owner, item.is_public) == (
        "Alert on write error rate",
        ActionItem.Status.IN_PROGRESS,
        alice,
        True,
    )


# --- Catalogue ----------------------------------------------------------------------------------


def test_it_shows_product_status_and_guards_the_location_tree(
    staff_client: Any, catalogue: dict[str, Any]
) -> None:
    make_incident(product=catalogue["storage"], start=T0, level=Level.MAJOR_OUTAGE)
    page = staff_client.get("/admin/incidents/product/").content.decode()
    assert "Major outage" in page

    response = staff_client.post(
        "/admin/incidents/location/add/",
        {"name": "asia-east1-a", "display_name": "", "kind": "zone", "parent": ""},
    )
    assert response.status_code == 200
    assert "A zone belongs to a region." in response.content.decode()
    assert not Location.objects.filter(name="asia-east1-a").exists()
    response = staff_client.post(
        "/admin/incidents/location/add/",
        {"name": "us-east1-b", "display_name": "", "kind": "zone", "parent": str(catalogue["region"].pk)},
    )
    assert response.status_code == 302
    assert Location.objects.get(name="us-east1-b").parent == catalogue["region"]


def test_it_files_and_edits_action_items_in_their_own_admin(
    staff_client: Any, alice: Any, catalogue: dict[str, Any]
) -> None:
    incident = make_incident(product=catalogue["storage"], start=T0)
    url = "/admin/incidents/actionitem/add/"
    data = {
        **form_data(staff_client.get(url), "actionitem_form"),
        "incident": str(incident.pk),
        "title": "Bad\x0btitle",
        "type": "repair",
        "priority": "P0",
        "status": "open",
    }
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "Line breaks and control characters are not allowed." in response.content.decode()
    assert not ActionItem.objects.exists()

    assert staff_client.post(url, {**data, "title": "Repair the rollback tool"}).status_code == 302
    item = ActionItem.objects.get()
    assert (item.incident, item.priority, item.type) == (incident, "P0", "repair")

    change_url = f"/admin/incidents/actionitem/{item.pk}/change/"
    data = {**form_data(staff_client.get(change_url), "actionitem_form"), "status": "done"}
    assert staff_client.post(change_url, data).status_code == 302
    item.refresh_from_db()
    assert item.status == ActionItem.Status.DONE
    assert item.incident == incident


def test_it_writes_products_and_groups_through_the_catalogue_services(
    staff_client: Any, catalogue: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    from edge import version
    from incidents.models import Product, ProductGroup

    data = {"name": "Bad\x0bname", "slug": "bad", "position": "3", "is_public": "on", "description": ""}
    response = staff_client.post("/admin/incidents/product/add/", data)
    assert response.status_code == 200
    assert "Line breaks and control characters are not allowed." in response.content.decode()
    assert not Product.objects.filter(slug="bad").exists()

    before = version.public_state_version()
    with django_capture_on_commit_callbacks(execute=True):
        created = staff_client.post("/admin/incidents/product/add/", {**data, "name": "Meet", "slug": "meet"})
    assert created.status_code == 302
    assert Product.objects.get(slug="meet").position == 3
    assert version.public_state_version() != before  # the service bumped the public version

    group_url = "/admin/incidents/productgroup/add/"
    group = {
        "name": "Workspace",
        "position": "0",
        "products-TOTAL_FORMS": "1",
        "products-INITIAL_FORMS": "0",
        "products-0-name": "Ch\x0bat",
        "products-0-slug": "chat",
        "products-0-position": "1",
        "products-0-is_public": "on",
    }
    response = staff_client.post(group_url, group)
    assert response.status_code == 200
    assert "Product 1" in response.content.decode()
    assert not ProductGroup.objects.filter(name="Workspace").exists()
    assert staff_client.post(group_url, {**group, "products-0-name": "Chat"}).status_code == 302
    assert Product.objects.get(slug="chat").group == ProductGroup.objects.get(name="Workspace")
