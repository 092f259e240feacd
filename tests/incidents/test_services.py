"""Writes of the incident domain: every rule a form or the API relies on."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from freezegun import freeze_time

from core.text import clean_single_line
from edge import version as cache
from incidents import selectors, services
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport, IncidentUpdate
from tests.builders import approve_report, make_incident, make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
Status = Incident.Status
T0 = utc(2026, 10, 8, 11, 0)


def window(product, start=T0, end=None, level=Level.PARTIAL_OUTAGE, location=None):  # type: ignore[no-untyped-def]
    return services.WindowSpec(
        product=product, level=level, started_at=start, ended_at=end, location=location
    )


def open_incident(**kw) -> Incident:  # type: ignore[no-untyped-def]
    kw.setdefault("title", "Cloud Storage write errors")
    kw.setdefault("started_at", T0)
    return services.incident_open(**kw)


# --- clean_single_line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "a\nb",
        "a\rb",
        "a\r\nBcc: x@example.org",
        "nul\x00 inside",
        "esc\x1b[31m",
        "del\x7f inside",
        "next\x85line",
        "line\u2028separator",
        "paragraph\u2029separator",
    ],
)
def test_it_refuses_line_breaks_and_control_characters(value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        clean_single_line(value, field="title")
    assert "title" in exc.value.message_dict


def test_it_strips_and_limits_single_lines() -> None:
    assert clean_single_line("  Gmail down \t", field="title") == "Gmail down"
    assert clean_single_line("tab\tinside", field="title") == "tab\tinside"
    with pytest.raises(ValidationError):
        clean_single_line("   ", field="title")
    with pytest.raises(ValidationError):
        clean_single_line("x" * 201, field="title")
    assert clean_single_line("x" * 200, field="title") == "x" * 200


# --- incident_open -------------------------------------------------------------------------


@freeze_time(T0 + timedelta(minutes=70))
def test_it_opens_an_incident_with_windows_and_a_first_update(django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    gcs = make_product("Cloud Storage")
    region = make_location("us-central1")
    version = cache.public_state_version()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        incident = open_incident(
            impact=Incident.Impact.MAJOR,
            detected_at=T0 + timedelta(minutes=50),
            body="We are investigating write errors.",
            windows=[window(gcs, location=region)],
        )

    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING
    assert incident.kind == Incident.Kind.INCIDENT
    assert incident.started_at == T0 and incident.resolved_at is None
    (w,) = incident.windows.all()
    assert (w.product, w.location, w.level, w.started_at, w.ended_at) == (
        gcs,
        region,
        Level.PARTIAL_OUTAGE,
        T0,
        None,
    )
    (update,) = incident.updates.all()
    assert update.status == Status.INVESTIGATING
    assert update.body == "We are investigating write errors."
    # Shown when it was posted, not when the impact began or was detected.
    assert update.display_at == update.created_at == T0 + timedelta(minutes=70)
    assert not selectors.update_backdated(update)
    # After the commit: one public bump and one private-pages bump, nothing else.
    assert len(callbacks) == 2
    assert cache.public_state_version() != version


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"title": "Gmail\r\nX-Injected: 1"}, "title"),
        ({"title": ""}, "title"),
        ({"impact": "apocalyptic"}, "impact"),
        ({"kind": "outage"}, "kind"),
        ({"status": "resolved"}, "status"),
        ({"status": "postmortem"}, "status"),
        ({"status": "scheduled"}, "status"),
        ({"started_at": datetime(2026, 10, 8, 11, 0)}, "started_at"),  # naive on purpose
        ({"detected_at": T0 - timedelta(minutes=1)}, "detected_at"),
    ],
)
def test_it_refuses_a_bad_incident_and_saves_nothing(kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        open_incident(**kwargs)
    assert field in exc.value.message_dict
    assert Incident.objects.count() == 0
    assert IncidentUpdate.objects.count() == 0


@pytest.mark.parametrize(
    ("spec_kwargs", "field"),
    [
        ({"level": "meltdown"}, "level"),
        ({"end": T0 - timedelta(seconds=1)}, "ended_at"),
        ({"start": datetime(2026, 10, 8, 11, 0)}, "started_at"),  # naive on purpose
    ],
)
def test_it_refuses_a_bad_window_and_saves_nothing(spec_kwargs: dict, field: str) -> None:
    gcs = make_product("Cloud Storage")
    with pytest.raises(ValidationError) as exc:
        open_incident(windows=[window(gcs, **spec_kwargs)])
    assert field in exc.value.message_dict
    assert Incident.objects.count() == 0
    assert ImpactWindow.objects.count() == 0


@freeze_time(T0 + timedelta(days=1))
def test_it_schedules_a_maintenance() -> None:
    bq = make_product("BigQuery")
    start, end = utc(2026, 12, 3, 6), utc(2026, 12, 3, 8)

    incident = open_incident(
        title="BigQuery maintenance",
        kind=Incident.Kind.MAINTENANCE,
        started_at=None,
        scheduled_for=start,
        scheduled_until=end,
        windows=[window(bq, start=start, end=end, level=Level.UNDER_MAINTENANCE)],
    )

    assert incident.status == Status.SCHEDULED
    assert incident.started_at == start
    # The announcement is shown when it was posted, not at the planned start.
    assert incident.updates.get().display_at == T0 + timedelta(days=1)


@pytest.mark.parametrize(
    "schedule",
    [
        {},
        {"scheduled_for": utc(2026, 12, 3, 6)},
        {"scheduled_for": utc(2026, 12, 3, 6), "scheduled_until": utc(2026, 12, 3, 5)},
    ],
)
def test_it_refuses_a_maintenance_without_a_proper_schedule(schedule: dict) -> None:
    with pytest.raises(ValidationError):
        open_incident(title="Maintenance", kind=Incident.Kind.MAINTENANCE, **schedule)
    assert Incident.objects.count() == 0


# --- incident_post_update -------------------------------------------------------------------


def test_it_records_status_changes_in_the_timeline() -> None:
    incident = open_incident(first_update_at=T0 + timedelta(minutes=5))

    services.incident_post_update(
        incident=incident, status=Status.IDENTIFIED, body="Found it.", display_at=T0 + timedelta(hours=1)
    )
    services.incident_post_update(
        incident=incident, status=Status.MONITORING, body="Fix deployed.", display_at=T0 + timedelta(hours=2)
    )

    incident.refresh_from_db()
    assert incident.status == Status.MONITORING
    assert incident.mitigated_at == T0 + timedelta(hours=2)
    assert list(incident.updates.order_by("display_at").values_list("status", "body")) == [
        ("investigating", "Cloud Storage write errors"),
        ("identified", "Found it."),
        ("monitoring", "Fix deployed."),
    ]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        ("postmortem", "Report is out."),
        ("scheduled", "Wrong kind."),
        ("exploded", "Unknown."),
        ("identified", "   "),
    ],
)
def test_it_refuses_a_bad_update(status: str, body: str) -> None:
    incident = open_incident()

    with pytest.raises(ValidationError):
        services.incident_post_update(incident=incident, status=status, body=body)

    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING
    assert incident.updates.count() == 1


def test_it_resolves_through_a_resolved_update() -> None:
    gcs = make_product("Cloud Storage")
    incident = open_incident(windows=[window(gcs)])
    end = T0 + timedelta(hours=3)

    update = services.incident_post_update(
        incident=incident, status=Status.RESOLVED, body="Fixed.", display_at=end
    )

    incident.refresh_from_db()
    assert update.status == Status.RESOLVED
    assert incident.status == Status.RESOLVED
    assert incident.resolved_at == end
    assert incident.windows.get().ended_at == end


def test_it_reopens_a_resolved_incident() -> None:
    gcs = make_product("Cloud Storage")
    incident = make_incident(product=gcs, start=T0, end=T0 + timedelta(hours=1))
    assert incident.status == Status.RESOLVED

    services.incident_post_update(
        incident=incident,
        status=Status.INVESTIGATING,
        body="Errors are back.",
        display_at=T0 + timedelta(hours=2),
    )

    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING
    assert incident.resolved_at is None
    assert not incident.is_closed
    # The window that was closed stays closed; new impact needs a new window.
    assert incident.windows.get().ended_at == T0 + timedelta(hours=1)
    # ... and it can be resolved again.
    services.incident_resolve(incident=incident, resolved_at=T0 + timedelta(hours=3))
    incident.refresh_from_db()
    assert incident.resolved_at == T0 + timedelta(hours=3)
    assert incident.updates.filter(status=Status.RESOLVED).count() == 2


# --- incident_resolve -----------------------------------------------------------------------


def test_it_resolves_and_closes_only_open_windows() -> None:
    gmail, drive = make_product("Gmail"), make_product("Drive")
    incident = open_incident(
        windows=[
            window(gmail),
            window(drive, end=T0 + timedelta(minutes=10), level=Level.DEGRADED_PERFORMANCE),
        ]
    )
    end = T0 + timedelta(minutes=90)

    update = services.incident_resolve(incident=incident, resolved_at=end, body="All good.")

    incident.refresh_from_db()
    assert incident.status == Status.RESOLVED
    assert incident.resolved_at == end
    assert incident.mitigated_at == end
    assert update.body == "All good." and update.display_at == end
    ends = dict(incident.windows.values_list("product__name", "ended_at"))
    assert ends == {"Gmail": end, "Drive": T0 + timedelta(minutes=10)}


def test_it_refuses_to_resolve_twice() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0, end=T0 + timedelta(hours=1))

    with pytest.raises(ValidationError):
        services.incident_resolve(incident=incident, resolved_at=T0 + timedelta(hours=2))
    with pytest.raises(ValidationError):
        services.incident_post_update(incident=incident, status=Status.RESOLVED, body="Again.")

    incident.refresh_from_db()
    assert incident.resolved_at == T0 + timedelta(hours=1)
    assert incident.updates.filter(status=Status.RESOLVED).count() == 1


def test_it_refuses_a_resolution_before_the_start() -> None:
    incident = open_incident(windows=[window(make_product("Gmail"))])

    with pytest.raises(ValidationError):
        services.incident_resolve(incident=incident, resolved_at=T0 - timedelta(minutes=1))

    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING
    assert incident.windows.get().ended_at is None


def test_it_completes_a_maintenance() -> None:
    start = utc(2026, 12, 3, 6)
    incident = open_incident(
        title="Maintenance",
        kind=Incident.Kind.MAINTENANCE,
        scheduled_for=start,
        scheduled_until=start + timedelta(hours=2),
    )
    services.incident_post_update(
        incident=incident, status=Status.IN_PROGRESS, body="Started.", display_at=start
    )

    update = services.incident_post_update(
        incident=incident, status=Status.COMPLETED, body="Done.", display_at=start + timedelta(hours=1)
    )

    incident.refresh_from_db()
    assert update.status == Status.COMPLETED
    assert incident.status == Status.COMPLETED
    assert incident.is_closed


# --- impact windows -------------------------------------------------------------------------


def test_it_adds_and_closes_windows() -> None:
    gcs = make_product("Cloud Storage")
    zone = make_location("us-central1-b", kind="zone")
    incident = open_incident()

    w = services.impact_window_add(
        incident=incident, product=gcs, level=Level.PARTIAL_OUTAGE, started_at=T0, location=zone
    )
    assert w.is_open
    services.impact_window_close(window=w, ended_at=T0 + timedelta(hours=1))

    w.refresh_from_db()
    assert w.ended_at == T0 + timedelta(hours=1)
    with pytest.raises(ValidationError):
        services.impact_window_close(window=w, ended_at=T0 + timedelta(hours=2))
    w.refresh_from_db()
    assert w.ended_at == T0 + timedelta(hours=1)


def test_it_refuses_to_close_a_window_before_it_starts() -> None:
    incident = open_incident(windows=[window(make_product("Gmail"))])
    w = incident.windows.get()

    with pytest.raises(ValidationError):
        services.impact_window_close(window=w, ended_at=T0 - timedelta(seconds=1))
    with pytest.raises(ValidationError):
        services.impact_window_add(incident=incident, product=w.product, level="bogus", started_at=T0)
    w.refresh_from_db()
    assert w.ended_at is None
    assert incident.windows.count() == 1


# --- reports --------------------------------------------------------------------------------


def write_report(incident: Incident, summary: str = "What happened.") -> IncidentReport:
    return services.report_save(
        incident=incident,
        summary=summary,
        root_cause="Why.",
        remediation="What we did.",
        impact_description="Who saw what.",
    )


def test_it_publishes_a_report_and_moves_to_postmortem() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0, end=T0 + timedelta(hours=1))
    write_report(incident)
    published = T0 + timedelta(days=2)
    approve_report(incident)

    report = services.report_publish(incident=incident, published_at=published)

    incident.refresh_from_db()
    report.refresh_from_db()
    assert report.status == IncidentReport.Status.PUBLISHED
    assert report.published_at == published
    assert incident.status == Status.POSTMORTEM
    with pytest.raises(ValidationError):
        services.report_publish(incident=incident)
    report.refresh_from_db()
    assert report.published_at == published


def test_it_keeps_a_published_report_published_when_edited() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0, end=T0 + timedelta(hours=1))
    write_report(incident)
    approve_report(incident)
    services.report_publish(incident=incident)

    report = write_report(incident, summary="Corrected summary.")

    report.refresh_from_db()
    assert report.is_published
    assert report.summary == "Corrected summary."
    assert IncidentReport.objects.count() == 1


def test_it_refuses_to_publish_too_early() -> None:
    incident = open_incident()
    with pytest.raises(ValidationError):
        services.report_publish(incident=incident)  # no report yet
    write_report(incident)
    approve_report(incident)
    with pytest.raises(ValidationError, match="Resolve the incident"):
        services.report_publish(incident=incident)  # still ongoing

    incident.refresh_from_db()
    assert incident.status == Status.INVESTIGATING
    assert incident.report.status == IncidentReport.Status.APPROVED


def test_it_refuses_to_publish_an_empty_summary() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0, end=T0 + timedelta(hours=1))
    write_report(incident, summary="  ")
    approve_report(incident)

    with pytest.raises(ValidationError, match="summary"):
        services.report_publish(incident=incident)

    incident.refresh_from_db()
    assert incident.status == Status.RESOLVED
    assert incident.report.published_at is None


def test_it_refuses_an_unknown_report_kind() -> None:
    incident = open_incident()
    with pytest.raises(ValidationError):
        services.report_save(incident=incident, kind="novel", summary="x")
    assert IncidentReport.objects.count() == 0


def test_it_keeps_a_maintenance_completed_when_its_report_is_published() -> None:
    start = utc(2026, 12, 3, 6)
    incident = open_incident(
        title="Maintenance",
        kind=Incident.Kind.MAINTENANCE,
        scheduled_for=start,
        scheduled_until=start + timedelta(hours=2),
    )
    services.incident_resolve(incident=incident, resolved_at=start + timedelta(hours=1))
    write_report(incident)

    approve_report(incident)
    services.report_publish(incident=incident)

    incident.refresh_from_db()
    assert incident.status == Status.COMPLETED
    assert incident.report.is_published


# --- action items ---------------------------------------------------------------------------


def test_it_creates_action_items(alice) -> None:  # type: ignore[no-untyped-def]
    incident = open_incident()

    item = services.action_item_create(
        incident=incident,
        title="Add request-router headroom",
        priority=ActionItem.Priority.P0,
        status=ActionItem.Status.IN_PROGRESS,
        owner=alice,
        is_public=True,
    )

    item.refresh_from_db()
    assert (item.title, item.priority, item.status, item.owner, item.is_public) == (
        "Add request-router headroom",
        "P0",
        "in_progress",
        alice,
        True,
    )
    assert item.type == ActionItem.Type.PREVENT


@pytest.mark.parametrize(
    "kwargs",
    [
        {"title": "Fix\nthis"},
        {"title": "ok", "priority": "P9"},
        {"title": "ok", "type": "pray"},
        {"title": "ok", "status": "forgotten"},
        {"title": "ok", "tracker_url": "javascript:alert(1)"},
    ],
)
def test_it_refuses_bad_action_items(kwargs: dict) -> None:
    incident = open_incident()
    with pytest.raises(ValidationError):
        services.action_item_create(incident=incident, **kwargs)
    assert ActionItem.objects.count() == 0
