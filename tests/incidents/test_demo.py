"""`load_demo`: the data it creates, and that a second run changes nothing."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.db.models import Model
from django.test import RequestFactory

from core.roles import ROLES
from demo import incidents as demo
from demo.roles import DEMO_USERS
from incidents import selectors
from incidents.intervals import format_duration
from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
    IncidentUpdate,
    Location,
    Product,
    ProductGroup,
)
from tests.builders import utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 11, 29, 14, 0)
MODELS: tuple[type[Model], ...] = (
    User,
    ProductGroup,
    Product,
    Location,
    Incident,
    ImpactWindow,
    IncidentUpdate,
    IncidentReport,
    ActionItem,
)


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every model the demo touches, every field."""
    return {m.__name__: list(m._default_manager.order_by("pk").values()) for m in MODELS}


def test_it_loads_twice_without_changing_anything() -> None:
    first = demo.load(now=NOW)
    before = snapshot()
    # A later day, too: the recent incidents are keyed on their titles, not on dates.
    second = demo.load(now=NOW + timedelta(days=9))

    assert first.created_anything
    assert first.staff_user_created
    assert len(first.incidents_created) == 10
    assert not second.created_anything
    assert second.incidents_created == []
    assert len(second.incidents_skipped) == 10
    assert snapshot() == before
    counts = {name: len(rows) for name, rows in before.items()}
    assert counts == {
        "User": 7,
        "ProductGroup": 2,
        "Product": 8,
        "Location": 13,
        "Incident": 10,
        "ImpactWindow": 11,
        "IncidentUpdate": 29,
        "IncidentReport": 6,
        "ActionItem": 11,
    }
    # Nobody is emailed about demo history.
    assert mail.outbox == []


def test_it_runs_as_a_command_and_reports_progress() -> None:
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "created: Gmail, 2009-09-01" in out.getvalue()
    assert "Demo data loaded (10 incidents created)." in out.getvalue()
    before = snapshot()

    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "exists, skipped: Cloud Storage, 2026-10-08/09" in out.getvalue()
    assert "nothing changed" in out.getvalue()
    assert snapshot() == before


def test_it_leaves_nothing_behind_when_an_incident_fails_half_way(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(**kwargs: Any) -> None:
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(demo.services, "action_item_create", boom)
    with pytest.raises(RuntimeError):
        demo.load(now=NOW)
    # The Gmail 2009 incident got as far as its report, then crashed: all of it is gone,
    # so the next run builds it in full instead of skipping a half-made incident.
    assert not Incident.objects.filter(title=demo.GMAIL_2009_TITLE).exists()
    assert not IncidentReport.objects.exists()

    monkeypatch.undo()
    summary = demo.load(now=NOW)
    assert len(summary.incidents_created) == 10
    assert Incident.objects.get(title=demo.GMAIL_2009_TITLE).action_items.count() == 3


def test_it_creates_the_catalogue() -> None:
    demo.load(now=NOW)

    workspace = ProductGroup.objects.get(name="Google Workspace")
    cloud = ProductGroup.objects.get(name="Google Cloud")
    assert set(workspace.products.values_list("slug", flat=True)) == {"gmail", "calendar", "drive", "meet"}
    assert set(cloud.products.values_list("slug", flat=True)) == {
        "cloud-storage",
        "compute-engine",
        "bigquery",
    }
    hidden = Product.objects.get(is_public=False)
    assert hidden.name == "Internal Billing Pipeline"
    assert hidden not in selectors.products_public()

    root = Location.objects.get(name="global")
    assert root.kind == Location.Kind.GLOBAL and root.parent is None
    regions = Location.objects.filter(kind=Location.Kind.REGION)
    assert set(regions.values_list("name", flat=True)) == {
        "us-central1",
        "us-east1",
        "europe-west1",
        "asia-east1",
    }
    assert all(r.parent == root for r in regions)
    zones = {
        z.name: z.parent.name if z.parent else None
        for z in Location.objects.filter(kind=Location.Kind.ZONE).select_related("parent")
    }
    assert zones == {
        "us-central1-a": "us-central1",
        "us-central1-b": "us-central1",
        "us-central1-c": "us-central1",
        "us-central1-f": "us-central1",
        "us-east1-b": "us-east1",
        "us-east1-c": "us-east1",
        "europe-west1-b": "europe-west1",
        "europe-west1-c": "europe-west1",
    }


def test_it_creates_a_staff_login(client) -> None:  # type: ignore[no-untyped-def]
    demo.load(now=NOW)

    user = User.objects.get(username="staff")
    assert user.is_staff and user.is_superuser and user.email == "staff@example.com"
    # The login limiter (django-axes) needs the request the credentials came with.
    assert client.login(
        request=RequestFactory().post("/admin/login/"), username="staff", password="staff-demo"
    )
    response = client.get("/admin/")
    assert response.status_code == 200


def test_it_keeps_an_existing_staff_password() -> None:
    User.objects.create_user("staff", "ops@example.org", "changed-by-ops")

    summary = demo.load(now=NOW)

    user = User.objects.get(username="staff")
    assert not summary.staff_user_created
    assert user.check_password("changed-by-ops")
    assert not user.check_password("staff-demo")
    assert user.email == "ops@example.org"
    # ...but it joins the Administrator group, so the demo (and the console) work as before.
    assert user.groups.filter(name="Administrator").exists()


def test_it_creates_one_login_per_role(client) -> None:  # type: ignore[no-untyped-def]
    first = demo.load(now=NOW)
    second = demo.load(now=NOW)

    assert first.role_users_created == len(ROLES) and second.role_users_created == 0
    for username, role in DEMO_USERS:
        user = User.objects.get(username=username)
        assert user.is_staff and not user.is_superuser
        assert list(user.groups.values_list("name", flat=True)) == [role]
        assert client.login(
            request=RequestFactory().post("/admin/login/"), username=username, password=f"{username}-demo"
        )
        assert client.get("/manage/").status_code == 200
        client.logout()


def test_it_tells_the_2009_gmail_outage_in_90_minutes() -> None:
    demo.load(now=NOW)

    incident = Incident.objects.get(title=demo.GMAIL_2009_TITLE)
    assert incident.started_at == utc(2009, 9, 1, 19, 45)
    assert incident.resolved_at == utc(2009, 9, 1, 21, 15)
    assert incident.started_at.astimezone(demo.PACIFIC).strftime("%A %H:%M") == "Tuesday 12:45"
    assert incident.status == Incident.Status.POSTMORTEM
    (window,) = incident.windows.all()
    assert window.product.slug == "gmail"
    assert window.location is not None and window.location.name == "global"
    assert window.level == ImpactWindow.Level.MAJOR_OUTAGE
    durations = selectors.incident_durations(incident=incident, now=NOW)
    assert durations.total == timedelta(minutes=90)
    assert not durations.ongoing

    statuses = list(incident.updates.order_by("display_at", "id").values_list("status", flat=True))
    assert statuses == ["investigating", "identified", "monitoring", "resolved"]
    report = incident.report
    assert report.is_published and report.kind == IncidentReport.Kind.FULL
    assert all([report.summary, report.root_cause, report.remediation, report.impact_description])
    assert "IMAP" in report.impact_description
    titles = list(incident.action_items.values_list("title", flat=True))
    assert len(titles) == 3
    assert any("headroom" in t for t in titles)
    assert any("datacenters" in t for t in titles)
    assert any("degrade gracefully" in t for t in titles)


def test_it_tells_the_2026_gmail_spam_incident() -> None:
    demo.load(now=NOW)

    incident = Incident.objects.get(title=demo.GMAIL_2026_TITLE)
    assert incident.started_at == utc(2026, 1, 24, 13, 2)
    assert incident.detected_at == utc(2026, 1, 24, 13, 12)
    assert incident.resolved_at == utc(2026, 1, 24, 17, 55)
    assert incident.started_at.astimezone(demo.PACIFIC).strftime("%A %H:%M") == "Saturday 05:02"
    (window,) = incident.windows.all()
    assert window.level == ImpactWindow.Level.PARTIAL_OUTAGE
    total = selectors.incident_durations(incident=incident, now=NOW).total
    assert total == timedelta(hours=4, minutes=53)
    assert incident.report.published_at == utc(2026, 2, 9, 5, 3, 28)
    assert incident.status == Incident.Status.POSTMORTEM
    assert incident.action_items.count() == 5


def test_it_keeps_the_cloud_storage_recurrence_as_a_second_window() -> None:
    demo.load(now=NOW)

    incident = Incident.objects.get(title=demo.GCS_TITLE)
    windows = list(incident.windows.select_related("location").order_by("started_at"))
    assert [(w.location.name if w.location else None, w.started_at, w.ended_at) for w in windows] == [
        ("us-central1", utc(2026, 10, 8, 11, 0), utc(2026, 10, 8, 23, 30)),
        ("us-central1-b", utc(2026, 10, 9, 11, 5), utc(2026, 10, 9, 16, 46)),
    ]
    assert {w.level for w in windows} == {ImpactWindow.Level.PARTIAL_OUTAGE}
    assert incident.detected_at == utc(2026, 10, 8, 11, 50)
    assert incident.recurrences.count() == 0

    durations = selectors.incident_durations(incident=incident, now=NOW)
    assert durations.total == timedelta(hours=18, minutes=11)
    assert format_duration(durations.total) == "18 h 11 min"
    (per_product,) = durations.per_product
    assert per_product.product.slug == "cloud-storage"
    assert [loc.name for loc in per_product.locations] == ["us-central1", "us-central1-b"]

    update_days = {u.display_at.date() for u in incident.updates.all()}
    assert update_days == {utc(2026, 10, 8).date(), utc(2026, 10, 9).date()}
    assert incident.status == Incident.Status.POSTMORTEM
    assert incident.report.is_published
    assert incident.action_items.count() == 3


def test_it_places_recent_incidents_in_the_last_90_days() -> None:
    demo.load(now=NOW)

    recent = Incident.objects.filter(
        kind=Incident.Kind.INCIDENT, started_at__gte=NOW - timedelta(days=90), started_at__lt=NOW
    ).exclude(title=demo.GCS_TITLE)
    assert 5 <= recent.count() <= 7
    for incident in recent:
        assert incident.is_closed
        minutes = selectors.incident_durations(incident=incident, now=NOW).total / timedelta(minutes=1)
        assert 10 <= minutes <= 90
        assert {w.level for w in incident.windows.all()} <= {
            ImpactWindow.Level.DEGRADED_PERFORMANCE,
            ImpactWindow.Level.PARTIAL_OUTAGE,
        }
    assert recent.filter(report__status=IncidentReport.Status.PUBLISHED, report__kind="mini").exists()


def test_it_shows_the_visibility_rules() -> None:
    demo.load(now=NOW)

    public = set(selectors.incidents_public().values_list("title", flat=True))
    hidden = Incident.objects.get(is_public=False)
    billing = Incident.objects.get(windows__product__slug="internal-billing-pipeline")
    assert billing.is_public  # hidden by its product, not by its own flag
    assert hidden.title not in public
    assert billing.title not in public
    assert Incident.objects.count() - len(public) == 2


def test_it_schedules_a_bigquery_maintenance_a_few_days_ahead() -> None:
    demo.load(now=NOW)

    maintenance = Incident.objects.get(kind=Incident.Kind.MAINTENANCE)
    assert maintenance.status == Incident.Status.SCHEDULED
    assert maintenance.scheduled_for is not None and maintenance.scheduled_until is not None
    assert NOW + timedelta(days=1) < maintenance.scheduled_for < NOW + timedelta(days=7)
    (window,) = maintenance.windows.select_related("product", "location")
    assert window.product.slug == "bigquery"
    assert window.location is not None and window.location.name == "europe-west1"
    assert window.level == ImpactWindow.Level.UNDER_MAINTENANCE
    # Not under maintenance yet; it will be during the window.
    bigquery = window.product
    assert selectors.product_statuses(at=NOW).get(bigquery.pk) is None
    during = maintenance.scheduled_for + timedelta(minutes=30)
    assert selectors.product_statuses(at=during)[bigquery.pk] == ImpactWindow.Level.UNDER_MAINTENANCE
