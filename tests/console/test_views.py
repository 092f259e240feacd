"""The staff console through the test client: access, each page, and what each form does."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from console.models import MessageTemplate
from credits.models import CreditNotice
from credits.services import credits_compute
from incidents import services
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport, Location, Product
from incidents.selectors import status_summary
from tests.builders import approve_report, make_group, make_incident, make_location, make_product, utc
from tests.credits.builders import customer, workspace_policy

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    # The test transaction never commits: run on-commit hooks as a real commit would.
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


@pytest.fixture
def catalogue(db: None) -> dict[str, Any]:
    workspace = make_group("Workspace")
    cloud = make_group("Cloud", position=1)
    return {
        "gmail": make_product("Gmail", group=workspace, position=1),
        "drive": make_product("Drive", group=workspace, position=2),
        "storage": make_product("Cloud Storage", group=cloud, position=3),
        "region": make_location("us-central1"),
    }


def _declare_data(catalogue: dict[str, Any], **extra: Any) -> dict[str, Any]:
    gmail: Product = catalogue["gmail"]
    storage: Product = catalogue["storage"]
    return {
        "title": "Gmail and Cloud Storage errors",
        "status": "investigating",
        "started_at": "2026-11-30T10:00",  # US/Pacific: 18:00 UTC
        f"level_{gmail.pk}_0": Level.MAJOR_OUTAGE,
        f"level_{storage.pk}_0": Level.DEGRADED_PERFORMANCE,
        "impact": "",
        "body": "We are investigating errors.",
        "notify": "on",
        "_publish": "1",
        **extra,
    }


def test_it_sends_anonymous_and_non_staff_users_to_the_login(client: Client, bob: User) -> None:
    for path in ("/manage/", "/manage/declare/", "/manage/templates/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/?next=/manage/")
    client.force_login(bob)
    assert client.get("/manage/").status_code == 302


def test_it_shows_what_is_open_now(staff_client: Client, catalogue: dict[str, Any], settings: Any) -> None:
    settings.CONSOLE_UPDATE_STALE_MINUTES = 30
    now = timezone.now()
    stale = make_incident(title="Stale outage", product=catalogue["gmail"], start=now - timedelta(hours=2))
    fresh = make_incident(title="Fresh outage", product=catalogue["drive"], start=now - timedelta(minutes=5))
    draft = make_incident(title="Drafted outage", product=catalogue["storage"], start=now, is_public=False)
    resolved = make_incident(
        title="Yesterday's blip",
        product=catalogue["gmail"],
        start=now - timedelta(days=1),
        end=now - timedelta(hours=20),
    )
    ActionItem.objects.create(incident=resolved, title="Add a canary", due_date=date(2020, 1, 1))
    # The 2009 Gmail outage: 90 minutes, a credit for a Workspace customer, awaiting review.
    make_incident(product=catalogue["gmail"], start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15))
    customer("Acme", policy=workspace_policy(), products=[(catalogue["gmail"], None)])
    credits_compute(period="2009-09")
    response = staff_client.get("/manage/")
    assert response.status_code == 200
    page = response.context["page"]
    assert [r.incident for r in page.active] == [fresh, stale]
    assert [r.stale for r in page.active] == [False, True]
    assert list(page.drafts) == [draft]
    assert resolved in page.resolved
    assert [i.title for i in page.overdue] == ["Add a canary"]
    assert page.credits_waiting == CreditNotice.objects.filter(state="computed").count() == 1
    html = response.content.decode()
    assert "No public update for more than 30 min" in html
    assert "/manage/credits/?state=computed" in html
    assert 'href="/manage/declare/"' in html
    assert "Times are shown and typed in <strong>US/Pacific</strong>" in html
    assert response["Cache-Control"] == "no-store"
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_it_declares_an_incident_in_the_display_time_zone(
    staff_client: Client, alice: User, catalogue: dict[str, Any]
) -> None:
    response = post(staff_client, "/manage/declare/", _declare_data(catalogue))
    incident = Incident.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/manage/incidents/{incident.public_id}/"
    assert incident.started_at == utc(2026, 11, 30, 18, 0)
    assert incident.is_public and incident.created_by == alice
    assert incident.impact == Incident.Impact.CRITICAL  # from the worst level
    windows = {(w.product.slug, w.level, w.started_at, w.ended_at) for w in incident.windows.all()}
    assert windows == {
        ("gmail", Level.MAJOR_OUTAGE, utc(2026, 11, 30, 18, 0), None),
        ("cloud-storage", Level.DEGRADED_PERFORMANCE, utc(2026, 11, 30, 18, 0), None),
    }
    assert incident.updates.get().body == "We are investigating errors."
    # The incident page names the zone it shows times in.
    page = staff_client.get(response["Location"]).content.decode()
    assert "Mon 30 Nov 2026, 10:00 PST" in page


def test_it_scopes_windows_to_the_chosen_locations(staff_client: Client, catalogue: dict[str, Any]) -> None:
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=catalogue["region"])
    where = [catalogue["region"].pk, zone.pk]
    data = _declare_data(
        catalogue, **{f"locations_{p.pk}": where for p in (catalogue["gmail"], catalogue["storage"])}
    )
    post(staff_client, "/manage/declare/", data)
    assert Incident.objects.get().windows.count() == 4


def test_it_saves_a_draft_and_publishes_it_later(staff_client: Client, catalogue: dict[str, Any]) -> None:
    data = _declare_data(catalogue)
    del data["_publish"]
    data["_draft"] = "1"
    post(staff_client, "/manage/declare/", data)
    incident = Incident.objects.get()
    assert not incident.is_public
    assert status_summary(now=timezone.now()).statuses[catalogue["gmail"].pk] == "operational"
    response = post(staff_client, f"/manage/incidents/{incident.public_id}/publish/", {})
    assert response.status_code == 302
    incident.refresh_from_db()
    assert incident.is_public


def test_it_refuses_a_declaration_without_products_or_twice(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    data = _declare_data(catalogue)
    data = {k: v for k, v in data.items() if not k.startswith("level_")}
    response = post(staff_client, "/manage/declare/", data)
    assert response.status_code == 200
    assert "Choose a level for at least one affected product." in response.content.decode()
    assert not Incident.objects.exists()
    post(staff_client, "/manage/declare/", _declare_data(catalogue))
    again = post(staff_client, "/manage/declare/", _declare_data(catalogue))
    assert again.status_code == 200
    assert "An incident with this title was declared" in again.content.decode()
    assert Incident.objects.count() == 1


def _incident(catalogue: dict[str, Any]) -> Incident:
    return services.incident_open(
        title="Storage errors",
        impact=Incident.Impact.CRITICAL,
        started_at=utc(2026, 11, 30, 18, 0),
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=catalogue["gmail"], level=Level.MAJOR_OUTAGE, started_at=utc(2026, 11, 30, 18, 0)
            ),
            services.WindowSpec(
                product=catalogue["storage"], level=Level.PARTIAL_OUTAGE, started_at=utc(2026, 11, 30, 18, 0)
            ),
        ],
    )


def test_it_posts_an_update_that_sets_product_levels(staff_client: Client, catalogue: dict[str, Any]) -> None:
    incident = _incident(catalogue)
    gmail, storage = catalogue["gmail"], catalogue["storage"]
    url = f"/manage/incidents/{incident.public_id}/update/"
    form = staff_client.get(url).context["form"]
    assert form.initial == {"status": "investigating"}
    assert [f.initial for _, f in form.targets] == [Level.MAJOR_OUTAGE, Level.PARTIAL_OUTAGE]
    response = post(
        staff_client,
        url,
        {
            "status": "monitoring",
            "body": "Recovered; monitoring.",
            "display_at": "2026-11-30T10:30",
            f"level_{gmail.pk}_0": "operational",
            f"level_{storage.pk}_0": Level.DEGRADED_PERFORMANCE,
            "impact": "",
            "add_level": "",
            "notify": "on",
            "_post": "1",
        },
    )
    assert response.status_code == 302, response.content.decode()
    windows = [
        (w.product.slug, w.level, w.started_at, w.ended_at)
        for w in incident.windows.order_by("product__position", "started_at")
    ]
    assert windows == [
        ("gmail", Level.MAJOR_OUTAGE, utc(2026, 11, 30, 18, 0), utc(2026, 11, 30, 18, 30)),
        ("cloud-storage", Level.PARTIAL_OUTAGE, utc(2026, 11, 30, 18, 0), utc(2026, 11, 30, 18, 30)),
        ("cloud-storage", Level.DEGRADED_PERFORMANCE, utc(2026, 11, 30, 18, 30), None),
    ]
    incident.refresh_from_db()
    assert incident.status == "monitoring"
    assert incident.impact == Incident.Impact.CRITICAL  # the worst it reached; the banner follows the levels
    summary = status_summary(now=timezone.now())
    assert summary.statuses == {
        gmail.pk: "operational",
        catalogue["drive"].pk: "operational",
        storage.pk: Level.DEGRADED_PERFORMANCE,
    }
    assert summary.banner.indicator == "minor"


def test_it_resolves_with_everything_operational(staff_client: Client, catalogue: dict[str, Any]) -> None:
    incident = _incident(catalogue)
    url = f"/manage/incidents/{incident.public_id}/update/?resolve=1"
    page = staff_client.get(url)
    form = page.context["form"]
    assert page.content.decode().count('<option value="operational" selected>') == 2
    assert form.initial["status"] == "resolved"
    assert {form.initial[f.name] for _, f in form.targets} == {"operational"}
    response = post(
        staff_client,
        url,
        {
            "status": "resolved",
            "body": "Fixed.",
            "display_at": "2026-11-30T11:00",
            "impact": "",
            "add_level": "",
            "_post": "1",
        }
        | {f.name: "operational" for _, f in form.targets},
    )
    assert response.status_code == 302
    incident.refresh_from_db()
    assert incident.status == "resolved"
    assert incident.resolved_at == utc(2026, 11, 30, 19, 0)
    assert set(incident.windows.values_list("ended_at", flat=True)) == {utc(2026, 11, 30, 19, 0)}


def test_it_refuses_a_level_change_before_the_window_began(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    incident = _incident(catalogue)
    gmail, storage = catalogue["gmail"], catalogue["storage"]
    url = f"/manage/incidents/{incident.public_id}/update/"
    data = {
        "status": "identified",
        "body": "Gmail is partly back.",
        "display_at": "2026-11-30T10:30",  # 18:30 UTC: Gmail's partial outage window begins
        f"level_{gmail.pk}_0": Level.PARTIAL_OUTAGE,
        f"level_{storage.pk}_0": Level.PARTIAL_OUTAGE,
        "impact": "",
        "_post": "1",
    }
    assert post(staff_client, url, data).status_code == 302
    earlier = {
        **data,
        "body": "Found it.",
        "display_at": "2026-11-30T10:15",  # after the start, before Gmail's current window
        f"level_{gmail.pk}_0": Level.DEGRADED_PERFORMANCE,
    }
    response = post(staff_client, url, earlier)
    assert response.status_code == 200
    [error] = response.context["form"].errors["display_at"]
    assert error == "Gmail has been partial outage since 2026-11-30 10:30 PST; a change must come after that."
    assert incident.windows.count() == 3 and incident.updates.count() == 2


def test_it_shows_why_a_pathological_message_is_refused(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    incident = _incident(catalogue)
    gmail, storage = catalogue["gmail"], catalogue["storage"]
    response = post(
        staff_client,
        f"/manage/incidents/{incident.public_id}/update/",
        {
            "status": "identified",
            "body": "# a\n" * 16384,  # 64 KB of one-line headings: 27 s to render, once
            "display_at": "",
            f"level_{gmail.pk}_0": Level.PARTIAL_OUTAGE,
            f"level_{storage.pk}_0": Level.PARTIAL_OUTAGE,
            "impact": "",
            "add_level": "",
            "_post": "1",
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "This text would take too long to render" in page
    assert "too many headings, rules or fences with no blank line between them (16,384)" in page
    assert incident.updates.count() == 1


def test_it_adds_a_product_with_an_update(staff_client: Client, catalogue: dict[str, Any]) -> None:
    incident = _incident(catalogue)
    gmail, storage, drive = catalogue["gmail"], catalogue["storage"], catalogue["drive"]
    post(
        staff_client,
        f"/manage/incidents/{incident.public_id}/update/",
        {
            "status": "identified",
            "body": "Drive is affected too.",
            "display_at": "2026-11-30T10:15",
            f"level_{gmail.pk}_0": Level.MAJOR_OUTAGE,
            f"level_{storage.pk}_0": Level.PARTIAL_OUTAGE,
            "add_product_1": drive.pk,
            "add_location_1": catalogue["region"].pk,
            "add_level_1": Level.DEGRADED_PERFORMANCE,
            "impact": "major",
            "_post": "1",
        },
    )
    added = incident.windows.get(product=drive)
    assert (added.location, added.level, added.started_at) == (
        catalogue["region"],
        Level.DEGRADED_PERFORMANCE,
        utc(2026, 11, 30, 18, 15),
    )
    assert incident.windows.filter(ended_at__isnull=False).count() == 0  # unchanged levels keep their windows
    incident.refresh_from_db()
    assert incident.impact == "critical"  # a lower impact chosen never lowers the worst reached


def test_it_previews_markdown_as_the_public_page_renders_it(staff_client: Client) -> None:
    response = staff_client.post("/manage/preview/", {"body": "**Fixed** <script>alert(1)</script>"})
    html = response.content.decode()
    assert "<strong>Fixed</strong>" in html
    assert "<script>" not in html
    assert Client().post("/manage/preview/", {"body": "x"}).status_code == 302


def test_it_writes_and_publishes_the_report_with_action_items(
    staff_client: Client, alice: User, catalogue: dict[str, Any]
) -> None:
    incident = make_incident(
        product=catalogue["gmail"], start=utc(2026, 11, 30, 18), end=utc(2026, 11, 30, 19)
    )
    url = f"/manage/incidents/{incident.public_id}/report/"
    assert staff_client.get(url).status_code == 200
    data = {
        "kind": "full",
        "summary": "Gmail was **down** for an hour.",
        "root_cause": "A bad config push.",
        "remediation": "Rolled back.",
        "impact_description": "",
        "items-TOTAL_FORMS": "2",
        "items-INITIAL_FORMS": "0",
        "items-0-title": "Canary config pushes",
        "items-0-type": "prevent",
        "items-0-priority": "P1",
        "items-0-status": "open",
        "items-0-owner": alice.pk,
        "items-0-due_date": "2026-12-15",
        "items-0-tracker_url": "https://tracker.example.org/123",
        "items-0-is_public": "on",
        "items-1-title": "",
        "items-1-type": "prevent",
        "items-1-priority": "P2",
        "items-1-status": "open",
        "_save": "1",
    }
    response = post(staff_client, url, data)
    assert response.status_code == 302
    item = ActionItem.objects.get()
    assert (item.owner, item.due_date, item.tracker_url, item.is_public) == (
        alice,
        date(2026, 12, 15),
        "https://tracker.example.org/123",
        True,
    )
    page = staff_client.get(url).content.decode()
    assert "<strong>down</strong>" in page  # the preview, through the public partial
    assert "Canary config pushes" in page
    data.update(
        {"items-INITIAL_FORMS": "1", "items-0-item_id": item.pk, "items-0-priority": "P0", "_publish": "1"}
    )
    del data["_save"]
    # Reviewed and approved, then published by an approver who is not the author (ADR 0021).
    approve_report(incident)
    carol = User.objects.create_user("carol", "carol@example.org", "x", is_staff=True, is_superuser=True)
    approver = Client()
    approver.force_login(carol)
    response = post(approver, url, data)
    assert response.status_code == 302
    assert ActionItem.objects.get().priority == "P0" and ActionItem.objects.count() == 1
    incident.refresh_from_db()
    assert incident.status == "postmortem"
    assert IncidentReport.objects.get().is_published
    public = Client().get(f"/incidents/{incident.public_id}/").content.decode()
    assert "Canary config pushes" in public and "<strong>down</strong>" in public


def test_it_refuses_publishing_without_a_summary(staff_client: Client, catalogue: dict[str, Any]) -> None:
    incident = make_incident(
        product=catalogue["gmail"], start=utc(2026, 11, 30, 18), end=utc(2026, 11, 30, 19)
    )
    response = post(
        staff_client,
        f"/manage/incidents/{incident.public_id}/report/",
        {
            "kind": "mini",
            "summary": "",
            "root_cause": "",
            "remediation": "",
            "impact_description": "",
            "items-TOTAL_FORMS": "0",
            "items-INITIAL_FORMS": "0",
            "_publish": "1",
        },
    )
    assert response.status_code == 200
    assert "A published report needs a summary." in response.content.decode()
    incident.refresh_from_db()
    assert incident.status == "resolved"


def test_it_manages_templates_and_fills_forms_from_them(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    response = post(
        staff_client,
        "/manage/templates/new/",
        {
            "name": "Elevated errors",
            "kind": "incident",
            "title": "Elevated error rates",
            "status": "investigating",
            "body": "We are looking into it.",
        },
    )
    assert response.status_code == 302
    template = MessageTemplate.objects.get()
    form = staff_client.get(f"/manage/declare/?template={template.pk}").context["form"]
    assert form.initial["title"] == "Elevated error rates"
    assert form.initial["body"] == "We are looking into it."
    bad = post(
        staff_client, "/manage/templates/new/", {"name": "Elevated errors", "kind": "update", "body": "x"}
    )
    assert "Another template has this name." in bad.content.decode()
    post(
        staff_client,
        f"/manage/templates/{template.pk}/",
        {"name": "Renamed", "kind": "update", "title": "", "status": "", "body": "Still."},
    )
    template.refresh_from_db()
    assert (template.name, template.kind) == ("Renamed", "update")
    incident = _incident(catalogue)
    update_form = staff_client.get(
        f"/manage/incidents/{incident.public_id}/update/?template={template.pk}"
    ).context["form"]
    assert update_form.initial["body"] == "Still."
    assert "Renamed" in staff_client.get("/manage/templates/").content.decode()
    post(staff_client, f"/manage/templates/{template.pk}/delete/", {})
    assert not MessageTemplate.objects.exists()


def test_it_has_no_inline_script_or_style(staff_client: Client, catalogue: dict[str, Any]) -> None:
    incident = _incident(catalogue)
    for path in (
        "/manage/",
        "/manage/declare/",
        f"/manage/incidents/{incident.public_id}/",
        f"/manage/incidents/{incident.public_id}/update/",
        f"/manage/incidents/{incident.public_id}/report/",
        "/manage/templates/",
        "/manage/templates/new/",
    ):
        html = staff_client.get(path).content.decode()
        assert " style=" not in html and "<style" not in html, path
        assert "<script>" not in html and '<script src="/static/js/console.js" defer></script>' in html, path


# --- Moved from the admin's incident buttons (the console is the staff UI for incidents) ---------


def _update_data(form: Any, **extra: Any) -> dict[str, Any]:
    return {
        "display_at": "",
        "impact": "",
        "add_level": "",
        "notify": "on",
        "_post": "1",
        **{f.name: f.initial for _, f in form.targets},
        **extra,
    }


def test_it_refuses_a_double_submitted_update(staff_client: Client, catalogue: dict[str, Any]) -> None:
    incident = _incident(catalogue)
    url = f"/manage/incidents/{incident.public_id}/update/"
    data = _update_data(staff_client.get(url).context["form"], status="identified", body="Cause found.")
    assert post(staff_client, url, data).status_code == 302
    again = post(staff_client, url, data)
    assert again.status_code == 200
    assert "it was not posted a second time" in again.content.decode()
    assert incident.updates.filter(body="Cause found.").count() == 1
    # A different update right after is news, not a duplicate; it may be backdated.
    backdated = {**data, "body": "Fix deploying.", "display_at": "2026-11-30T10:30"}
    assert post(staff_client, url, backdated).status_code == 302
    assert incident.updates.count() == 3
    assert incident.updates.get(body="Fix deploying.").display_at == utc(2026, 11, 30, 18, 30)


def test_it_refuses_postmortem_statuses_of_the_other_kind_and_a_second_resolve(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    incident = _incident(catalogue)
    url = f"/manage/incidents/{incident.public_id}/update/"
    form = staff_client.get(url).context["form"]
    for status in ("postmortem", "in_progress"):
        response = post(staff_client, url, _update_data(form, status=status, body="x"))
        assert response.status_code == 200
        assert "Select a valid choice" in response.content.decode()
    assert incident.updates.count() == 1
    operational = {f.name: "operational" for _, f in form.targets}
    resolve = _update_data(form, status="resolved", body="Fixed.", **operational)
    assert post(staff_client, url, resolve).status_code == 302
    again = post(staff_client, url, {**resolve, "body": "Fixed, really."})
    assert again.status_code == 200
    assert "already resolved" in again.content.decode()
    assert incident.updates.filter(status="resolved").count() == 1


def test_it_completes_a_maintenance(staff_client: Client, catalogue: dict[str, Any]) -> None:
    maintenance = services.incident_open(
        title="Storage maintenance",
        kind=Incident.Kind.MAINTENANCE,
        scheduled_for=utc(2026, 11, 30, 18),
        scheduled_until=utc(2026, 11, 30, 20),
        windows=[
            services.WindowSpec(
                product=catalogue["storage"], level=Level.UNDER_MAINTENANCE, started_at=utc(2026, 11, 30, 18)
            )
        ],
    )
    url = f"/manage/incidents/{maintenance.public_id}/update/?resolve=1"
    form = staff_client.get(url).context["form"]
    assert form.initial["status"] == "completed"
    response = post(staff_client, url, _update_data(form, status="completed", body=""))
    assert response.status_code == 200  # the console asks for a message
    response = post(staff_client, url, _update_data(form, status="completed", body="Done."))
    assert response.status_code == 302
    maintenance.refresh_from_db()
    assert maintenance.status == Incident.Status.COMPLETED
    assert maintenance.windows.get().ended_at == maintenance.resolved_at


def test_it_refuses_to_publish_the_report_of_an_unresolved_incident(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    incident = _incident(catalogue)
    response = post(
        staff_client,
        f"/manage/incidents/{incident.public_id}/report/",
        {
            "kind": "mini",
            "summary": "Too early.",
            "root_cause": "",
            "remediation": "",
            "impact_description": "",
            "items-TOTAL_FORMS": "0",
            "items-INITIAL_FORMS": "0",
            "_publish": "1",
        },
    )
    assert response.status_code == 200
    assert "Resolve the incident before publishing its report." in response.content.decode()
    incident.refresh_from_db()
    assert incident.status == Incident.Status.INVESTIGATING
    assert IncidentReport.objects.get().status == IncidentReport.Status.DRAFT


def test_it_links_the_admin_incident_page_to_the_console(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    incident = _incident(catalogue)
    page = staff_client.get(f"/admin/incidents/incident/{incident.pk}/change/").content.decode()
    assert f'href="/manage/incidents/{incident.public_id}/"' in page
    with pytest.raises(NoReverseMatch):  # the admin's own update/resolve/report pages are gone
        reverse("admin:incidents_incident_resolve", args=[incident.pk])
