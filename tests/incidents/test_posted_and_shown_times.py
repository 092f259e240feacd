"""Posting time and shown time (docs/adr/0013-posted-and-shown-times.md): an entry is shown
when it was posted unless staff say otherwise, never before the impact began, and every
time a message names is in the display zone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from freezegun import freeze_time

from core.timezones import format_local
from incidents import selectors, services
from incidents.models import ImpactWindow, Incident, IncidentUpdate
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
# Impact began at 00:50 Paris time (22:50 UTC), declared at 01:10 (23:10 UTC).
STARTED = utc(2026, 10, 7, 22, 50)
DECLARED = utc(2026, 10, 7, 23, 10)


@pytest.fixture(autouse=True)
def _paris(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DISPLAY_TIME_ZONE = "Europe/Paris"


def _declare(**kw) -> Incident:  # type: ignore[no-untyped-def]
    gcs = make_product("Cloud Storage")
    kw.setdefault(
        "windows", [services.WindowSpec(product=gcs, level=Level.PARTIAL_OUTAGE, started_at=STARTED)]
    )
    return services.incident_declare(title="Cloud Storage write errors", started_at=STARTED, **kw)


# --- format_local ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "at", "text"),
    [
        ("Europe/Paris", utc(2026, 10, 7, 23, 10), "2026-10-08 01:10 CEST"),
        ("Europe/Paris", utc(2026, 12, 1, 9, 5), "2026-12-01 10:05 CET"),
        ("US/Pacific", utc(2026, 10, 8, 11, 0), "2026-10-08 04:00 PDT"),
        ("UTC", utc(2026, 10, 8, 11, 0), "2026-10-08 11:00 UTC"),
    ],
)
def test_it_formats_times_in_the_display_zone_with_its_name(settings, zone, at, text) -> None:  # type: ignore[no-untyped-def]
    settings.DISPLAY_TIME_ZONE = zone
    assert format_local(at) == text


# --- The opening entry -------------------------------------------------------------------------


@freeze_time(DECLARED)
def test_the_first_entry_is_shown_when_it_was_posted() -> None:
    incident = _declare(detected_at=STARTED + timedelta(minutes=5), body="Investigating.")

    update = incident.updates.get()
    assert update.display_at == update.created_at == DECLARED  # 01:10, not 00:50
    assert not selectors.update_backdated(update)


@freeze_time(DECLARED)
def test_staff_may_show_the_first_entry_earlier_and_the_posting_time_is_kept() -> None:
    incident = _declare(first_update_at=STARTED + timedelta(minutes=5))

    update = incident.updates.get()
    assert update.display_at == STARTED + timedelta(minutes=5)
    assert update.created_at == DECLARED
    assert selectors.update_backdated(update)


@freeze_time(DECLARED)
@pytest.mark.parametrize(
    ("first_update_at", "message"),
    [
        (STARTED - timedelta(minutes=1), "before the impact began (2026-10-08 00:50 CEST)"),
        (DECLARED + timedelta(hours=1), "cannot be in the future"),
    ],
)
def test_it_refuses_a_first_entry_before_the_start_or_in_the_future(first_update_at, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as refused:
        _declare(first_update_at=first_update_at)
    assert message in refused.value.message_dict["first_update_at"][0]
    assert Incident.objects.count() == 0
    assert IncidentUpdate.objects.count() == 0


@freeze_time(DECLARED)
def test_a_maintenance_is_announced_when_it_is_posted() -> None:
    start = DECLARED + timedelta(days=3)
    maintenance = services.incident_open(
        title="BigQuery maintenance",
        kind=Incident.Kind.MAINTENANCE,
        scheduled_for=start,
        scheduled_until=start + timedelta(hours=2),
    )
    assert maintenance.updates.get().display_at == DECLARED
    # Updates before the planned start are announcements, not backdated news.
    later = services.incident_post_update(
        incident=maintenance,
        status="scheduled",
        body="Moved by an hour.",
        display_at=DECLARED + timedelta(hours=1),
    )
    assert later.display_at < maintenance.started_at


def test_update_backdated_allows_a_minute_of_writing_time() -> None:
    update = IncidentUpdate(created_at=DECLARED, display_at=DECLARED - timedelta(seconds=60))
    assert not selectors.update_backdated(update)
    update.display_at = DECLARED - timedelta(seconds=61)
    assert selectors.update_backdated(update)


# --- No update before the start ------------------------------------------------------------------


@freeze_time(DECLARED)
@pytest.mark.parametrize("status", ["identified", "resolved"])
def test_it_refuses_an_update_shown_before_the_impact_began(status: str) -> None:
    incident = _declare()

    with pytest.raises(ValidationError) as refused:
        services.incident_post_update(
            incident=incident, status=status, body="Earlier.", display_at=STARTED - timedelta(minutes=10)
        )
    assert refused.value.message_dict["display_at"] == [
        "This time is before the impact began (2026-10-08 00:50 CEST)."
    ]
    incident.refresh_from_db()
    assert incident.status == "investigating" and incident.resolved_at is None
    assert incident.updates.count() == 1
    assert incident.windows.get().ended_at is None


@freeze_time(DECLARED)
def test_an_update_with_levels_before_the_start_moves_nothing() -> None:
    incident = _declare()
    gcs = incident.windows.get().product

    with pytest.raises(ValidationError) as refused:
        services.incident_post_update_with_levels(
            incident=incident,
            status="identified",
            body="Earlier.",
            levels=[services.LevelSpec(product=gcs, level="operational")],
            display_at=STARTED - timedelta(minutes=10),
        )
    assert "display_at" in refused.value.message_dict
    assert incident.windows.get().ended_at is None
    assert incident.updates.count() == 1


@freeze_time(DECLARED)
def test_a_level_change_before_the_window_names_the_time_in_the_display_zone() -> None:
    incident = _declare()
    gcs = incident.windows.get().product
    later = STARTED + timedelta(minutes=10)
    services.impact_levels_set(
        incident=incident, levels=[services.LevelSpec(product=gcs, level=Level.MAJOR_OUTAGE)], at=later
    )

    with pytest.raises(ValidationError) as refused:
        services.impact_levels_set(
            incident=incident,
            levels=[services.LevelSpec(product=gcs, level=Level.DEGRADED_PERFORMANCE)],
            at=STARTED + timedelta(minutes=5),
        )
    (message,) = refused.value.message_dict["display_at"]
    assert "since 2026-10-08 01:00 CEST" in message
    assert "UTC" not in message
