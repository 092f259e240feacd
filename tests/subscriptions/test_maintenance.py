"""Scheduled maintenance driven by the beat task, with the clock moved by freezegun."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents import tasks as incident_tasks
from incidents.maintenance import maintenance_advance
from incidents.models import ImpactWindow, Incident
from incidents.selectors import product_statuses
from subscriptions import tasks
from subscriptions.maintenance import maintenance_remind_due
from subscriptions.models import Fanout
from tests.builders import utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db

START = utc(2026, 6, 2, 17, 0)  # 10:00 US/Pacific
END = utc(2026, 6, 2, 19, 0)


def _schedule(product: Any, *, title: str = "Gmail storage backend upgrade", **kw: Any) -> Incident:
    start, end = kw.pop("start", START), kw.pop("end", END)
    return services.incident_open(
        title=title,
        kind=Incident.Kind.MAINTENANCE,
        impact=Incident.Impact.NONE,
        scheduled_for=start,
        scheduled_until=end,
        body="We will upgrade the storage backend; mail may be delayed by a few minutes.",
        windows=[
            services.WindowSpec(product=product, level=ImpactWindow.Level.UNDER_MAINTENANCE, started_at=start)
        ],
        **kw,
    )


def _subjects() -> list[str]:
    return [str(m.subject) for m in mail.outbox]


@dataclass(frozen=True)
class Tick:
    started: int
    completed: int
    reminded: int


def _tick(capture: Any) -> Tick:
    # What the beat does each minute: the domain's transitions, then the reminders.
    with capture(execute=True):
        advanced = maintenance_advance()
        reminded = maintenance_remind_due()
    return Tick(started=advanced.started, completed=advanced.completed, reminded=reminded)


def test_it_runs_a_maintenance_from_reminder_to_completion(
    client: Client, settings, gmail, cloud_storage, django_capture_on_commit_callbacks
) -> None:
    settings.MAINTENANCE_REMINDER_MINUTES = 60
    make_subscriber("gmail-fan@example.com", products=[gmail])
    make_subscriber("storage-fan@example.com", products=[cloud_storage])
    capture = django_capture_on_commit_callbacks

    with freeze_time(START - timedelta(days=2)) as clock:
        with capture(execute=True):
            maintenance = _schedule(gmail)
        assert _subjects() == ["[Status] Scheduled: Gmail storage backend upgrade"]
        assert "2026-06-02 10:00 PDT to 2026-06-02 12:00 PDT" in mail.outbox[0].body

        clock.move_to(START - timedelta(minutes=61))
        assert _tick(capture).reminded == 0
        clock.move_to(START - timedelta(minutes=59))
        assert _tick(capture).reminded == 1
        clock.move_to(START - timedelta(minutes=30))
        assert _tick(capture).reminded == 0  # once
        assert Fanout.objects.get().key == f"maintenance-reminder:{maintenance.pk}"
        assert _subjects()[-1] == "[Status] Maintenance starts in 59 min: Gmail storage backend upgrade"

        clock.move_to(START - timedelta(seconds=1))
        assert _tick(capture).started == 0
        assert product_statuses().get(gmail.pk, "operational") == "operational"
        maintenance.refresh_from_db()
        assert maintenance.status == "scheduled"

        clock.move_to(START + timedelta(seconds=20))
        result = _tick(capture)
        assert (result.started, result.completed) == (1, 0)
        maintenance.refresh_from_db()
        assert maintenance.status == "in_progress"
        latest = maintenance.updates.order_by("-display_at", "-id").first()
        assert latest is not None and latest.status == "in_progress" and latest.display_at == START
        assert product_statuses()[gmail.pk] == "under_maintenance"
        assert _subjects()[-1] == "[Status] In progress: Gmail storage backend upgrade"

        # Visible on the public page and in the Statuspage-format API.
        page = client.get("/").content.decode()
        assert "Gmail storage backend upgrade" in page
        active = client.get("/api/v2/scheduled-maintenances/active.json").json()
        assert [m["id"] for m in active["scheduled_maintenances"]] == [maintenance.public_id]
        assert active["scheduled_maintenances"][0]["status"] == "in_progress"
        upcoming = client.get("/api/v2/scheduled-maintenances/upcoming.json").json()
        assert upcoming["scheduled_maintenances"] == []
        summary = client.get("/api/v2/summary.json").json()
        gmail_component = next(c for c in summary["components"] if c["name"] == "Gmail")
        assert gmail_component["status"] == "under_maintenance"

        clock.move_to(START + timedelta(minutes=1))
        assert _tick(capture) == type(result)(started=0, completed=0, reminded=0)  # idempotent

        clock.move_to(END + timedelta(seconds=40))
        result = _tick(capture)
        assert (result.started, result.completed) == (0, 1)
        maintenance.refresh_from_db()
        assert maintenance.status == "completed"
        assert maintenance.resolved_at == END
        assert list(maintenance.windows.values_list("ended_at", flat=True)) == [END]
        assert product_statuses().get(gmail.pk, "operational") == "operational"
        assert [u.status for u in maintenance.updates.order_by("display_at", "id")] == [
            "scheduled",
            "in_progress",
            "completed",
        ]
        active = client.get("/api/v2/scheduled-maintenances/active.json").json()
        assert active["scheduled_maintenances"] == []
        everything = client.get("/api/v2/scheduled-maintenances.json").json()
        assert [(m["id"], m["status"]) for m in everything["scheduled_maintenances"]] == [
            (maintenance.public_id, "completed")
        ]

        assert _tick(capture).completed == 0

    # The Gmail subscriber got the four maintenance emails, once each; the Cloud
    # Storage subscriber nothing.
    assert {tuple(m.to) for m in mail.outbox} == {("gmail-fan@example.com",)}
    assert _subjects() == [
        "[Status] Scheduled: Gmail storage backend upgrade",
        "[Status] Maintenance starts in 59 min: Gmail storage backend upgrade",
        "[Status] In progress: Gmail storage backend upgrade",
        "[Status] Completed: Gmail storage backend upgrade",
    ]


def test_it_shows_upcoming_maintenance_before_it_starts(client: Client, gmail) -> None:
    with freeze_time(START - timedelta(hours=3)):
        maintenance = _schedule(gmail)
        upcoming = client.get("/api/v2/scheduled-maintenances/upcoming.json").json()
        assert [m["id"] for m in upcoming["scheduled_maintenances"]] == [maintenance.public_id]
        assert "Gmail storage backend upgrade" in client.get("/").content.decode()


def test_it_completes_a_window_missed_entirely_without_a_start_email(
    settings, gmail, django_capture_on_commit_callbacks
) -> None:
    make_subscriber("gmail-fan@example.com", products=[gmail])
    with freeze_time(START - timedelta(days=1)) as clock:
        with django_capture_on_commit_callbacks(execute=True):
            maintenance = _schedule(gmail)
        clock.move_to(END + timedelta(hours=2))  # beat was down for the whole window
        result = _tick(django_capture_on_commit_callbacks)
    assert (result.started, result.completed, result.reminded) == (0, 1, 0)
    maintenance.refresh_from_db()
    assert maintenance.status == "completed" and maintenance.resolved_at == END
    assert _subjects() == [
        "[Status] Scheduled: Gmail storage backend upgrade",
        "[Status] Completed: Gmail storage backend upgrade",
    ]


def test_it_skips_the_reminder_for_maintenance_announced_at_short_notice(
    settings, gmail, django_capture_on_commit_callbacks
) -> None:
    settings.MAINTENANCE_REMINDER_MINUTES = 60
    make_subscriber("gmail-fan@example.com", products=[gmail])
    with freeze_time(START - timedelta(minutes=20)):
        with django_capture_on_commit_callbacks(execute=True):
            _schedule(gmail)
        assert _tick(django_capture_on_commit_callbacks).reminded == 0
    assert len(mail.outbox) == 1


def test_it_leaves_maintenance_finished_by_staff_alone(gmail, django_capture_on_commit_callbacks) -> None:
    with freeze_time(START + timedelta(minutes=5)) as clock:
        maintenance = _schedule(gmail)
        services.incident_post_update(
            incident=maintenance, status=Incident.Status.IN_PROGRESS, body="Started by hand."
        )
        services.incident_resolve(incident=maintenance, body="Done early.")
        clock.move_to(END + timedelta(minutes=1))
        result = _tick(django_capture_on_commit_callbacks)
    assert (result.started, result.completed) == (0, 0)
    maintenance.refresh_from_db()
    assert maintenance.updates.count() == 3


def test_the_beat_task_calls_the_tick(gmail) -> None:
    with freeze_time(START - timedelta(days=1)) as clock:
        maintenance = _schedule(gmail)
        clock.move_to(START + timedelta(minutes=1))
        assert incident_tasks.maintenance_advance.delay().get() == {"started": 1, "completed": 0}
        assert tasks.maintenance_reminders.delay().get() == 0
    maintenance.refresh_from_db()
    assert maintenance.status == "in_progress"
