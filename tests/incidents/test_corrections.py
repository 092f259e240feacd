"""Corrections after the fact: editing a published update, level changes without a public
entry, moving the start of impact, and the duplicate-title warning."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from freezegun import freeze_time

from edge import version as cache
from incidents import events, selectors, services
from incidents.models import ImpactWindow, Incident, IncidentNote, IncidentUpdateRevision
from tests.builders import make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
T0 = utc(2026, 10, 8, 11, 0)
NOW = T0 + timedelta(hours=2)


@pytest.fixture
def heard(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """Every incident event announced that subscribers hear about ("impact_changed" is
    for caches and figures)."""
    kinds: list[str] = []

    def spy(event: events.IncidentEvent) -> None:
        if event.kind != "impact_changed":
            kinds.append(event.kind)

    monkeypatch.setitem(events._handlers, "test-spy", spy)
    return kinds


@pytest.fixture
def incident() -> Incident:
    gcs = make_product("Cloud Storage")
    with freeze_time(T0 + timedelta(minutes=5)):
        return services.incident_open(
            title="Cloud Storage write errors",
            started_at=T0,
            body="We are *investigating*.",
            windows=[services.WindowSpec(product=gcs, level=Level.PARTIAL_OUTAGE, started_at=T0)],
        )


# --- Editing a published update ----------------------------------------------------------------


@freeze_time(NOW)
def test_it_corrects_an_update_and_keeps_the_previous_text(
    incident: Incident, alice: Any, heard: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    update = incident.updates.get()
    version = cache.public_state_version()

    with django_capture_on_commit_callbacks(execute=True):
        services.incident_update_edit(
            update=update, body="We are **investigating** write errors.", actor=alice
        )
        services.incident_update_edit(update=update, body="Write errors in us-central1.", actor=alice)

    update.refresh_from_db()
    assert update.body == "Write errors in us-central1."
    assert update.body_html == "<p>Write errors in us-central1.</p>"
    assert update.edited_at == NOW
    assert update.display_at == T0 + timedelta(minutes=5)  # the shown time stays
    revisions = selectors.update_revisions(update)
    assert [(r.body, r.body_html, r.edited_by, r.edited_at) for r in revisions] == [
        ("We are *investigating*.", "<p>We are <em>investigating</em>.</p>", alice, NOW),
        (
            "We are **investigating** write errors.",
            "<p>We are <strong>investigating</strong> write errors.</p>",
            alice,
            NOW,
        ),
    ]
    assert cache.public_state_version() != version
    assert heard == []  # a correction notifies nobody


@pytest.mark.parametrize(
    ("body", "message"), [("We are *investigating*.", "unchanged"), ("  \n", "cannot be emptied")]
)
def test_it_refuses_an_unchanged_or_empty_text(incident: Incident, body: str, message: str) -> None:
    update = incident.updates.get()
    with pytest.raises(ValidationError) as refused:
        services.incident_update_edit(update=update, body=body)
    assert message in refused.value.message_dict["body"][0]
    update.refresh_from_db()
    assert (update.body, update.edited_at) == ("We are *investigating*.", None)
    assert IncidentUpdateRevision.objects.count() == 0


def test_editing_an_update_needs_the_update_action(incident: Incident, bob: Any) -> None:
    with pytest.raises(PermissionDenied):
        services.incident_update_edit(update=incident.updates.get(), body="Changed.", actor=bob)
    assert IncidentUpdateRevision.objects.count() == 0


# --- Level changes without a public entry ------------------------------------------------------


@freeze_time(NOW)
def test_it_changes_levels_without_a_public_entry(
    incident: Incident, alice: Any, heard: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    gcs = incident.windows.get().product
    region = make_location("us-central1")
    version = cache.public_state_version()
    at = T0 + timedelta(minutes=40)

    with django_capture_on_commit_callbacks(execute=True):
        changed = services.incident_levels_change(
            incident=incident,
            levels=[
                services.LevelSpec(product=gcs, level=Level.DEGRADED_PERFORMANCE),
                services.LevelSpec(product=gcs, location=region, level=Level.MAJOR_OUTAGE),
            ],
            at=at,
            note="Failover to us-east1 running; said nothing publicly yet.",
            actor=alice,
        )

    assert changed == 2
    windows = [
        (w.level, w.location, w.started_at, w.ended_at) for w in incident.windows.order_by("started_at", "id")
    ]
    assert windows == [
        (Level.PARTIAL_OUTAGE, None, T0, at),
        (Level.DEGRADED_PERFORMANCE, None, at, None),
        (Level.MAJOR_OUTAGE, region, at, None),
    ]
    assert incident.updates.count() == 1  # no public entry
    assert heard == []  # nobody told
    assert cache.public_state_version() != version  # but the levels are public
    incident.refresh_from_db()
    assert incident.impact == "critical"  # a level change raises the worst impact
    (note,) = selectors.incident_notes(incident)
    assert (note.body, note.at, note.author) == (
        "Failover to us-east1 running; said nothing publicly yet.",
        at,
        alice,
    )


@freeze_time(NOW)
def test_a_level_change_defaults_to_now(incident: Incident) -> None:
    gcs = incident.windows.get().product
    assert (
        services.incident_levels_change(
            incident=incident, levels=[services.LevelSpec(product=gcs, level="operational")]
        )
        == 1
    )
    assert incident.windows.get().ended_at == NOW
    assert IncidentNote.objects.count() == 0


@freeze_time(NOW)
def test_a_note_alone_is_kept_and_changes_no_level(incident: Incident) -> None:
    gcs = incident.windows.get().product
    changed = services.incident_levels_change(
        incident=incident,
        levels=[services.LevelSpec(product=gcs, level=Level.PARTIAL_OUTAGE)],
        note="Still partial.",
    )
    assert changed == 0
    assert incident.windows.get().ended_at is None
    assert [n.body for n in selectors.incident_notes(incident)] == ["Still partial."]


@freeze_time(NOW)
@pytest.mark.parametrize(
    ("level", "at", "field", "message"),
    [
        (Level.PARTIAL_OUTAGE, None, "levels", "No level changed"),
        ("operational", T0 - timedelta(minutes=1), "at", "before the impact began (2026-10-08 04:00 PDT)"),
        ("operational", NOW + timedelta(hours=1), "at", "cannot be in the future"),
        ("meltdown", None, "level", "Unknown level"),
    ],
)
def test_it_refuses_a_bad_level_change_and_changes_nothing(
    incident: Incident, level, at, field, message
) -> None:  # type: ignore[no-untyped-def]
    gcs = incident.windows.get().product
    with pytest.raises(ValidationError) as refused:
        services.incident_levels_change(
            incident=incident, levels=[services.LevelSpec(product=gcs, level=level)], at=at
        )
    assert message in refused.value.message_dict[field][0]
    assert incident.windows.get().ended_at is None
    assert IncidentNote.objects.count() == 0


@freeze_time(NOW)
def test_a_closed_incident_takes_no_level_change(incident: Incident) -> None:
    services.incident_resolve(incident=incident, resolved_at=T0 + timedelta(hours=1))
    gcs = incident.windows.get().product
    with pytest.raises(ValidationError, match="reopen it"):
        services.incident_levels_change(
            incident=incident, levels=[services.LevelSpec(product=gcs, level=Level.MAJOR_OUTAGE)]
        )
    assert incident.windows.count() == 1


def test_a_level_change_needs_the_update_action(incident: Incident, bob: Any) -> None:
    gcs = incident.windows.get().product
    with pytest.raises(PermissionDenied):
        services.incident_levels_change(
            incident=incident, levels=[services.LevelSpec(product=gcs, level="operational")], actor=bob
        )
    assert incident.windows.get().ended_at is None


# --- Moving the start of impact ---------------------------------------------------------------


@freeze_time(NOW)
def test_editing_the_start_moves_the_windows_that_began_with_it(incident: Incident) -> None:
    gcs = incident.windows.get().product
    later = services.impact_window_add(
        incident=incident,
        product=make_product("Gmail"),
        level=Level.DEGRADED_PERFORMANCE,
        started_at=T0 + timedelta(minutes=30),
    )
    earlier = T0 - timedelta(minutes=20)

    services.incident_edit(incident=incident, changes={"started_at": earlier})

    incident.refresh_from_db()
    assert incident.started_at == earlier
    assert incident.windows.get(product=gcs).started_at == earlier
    later.refresh_from_db()
    assert later.started_at == T0 + timedelta(minutes=30)  # began on its own


@freeze_time(NOW)
def test_it_refuses_a_start_after_the_end_of_a_window_that_began_with_it(incident: Incident) -> None:
    window = incident.windows.get()
    services.impact_window_close(window=window, ended_at=T0 + timedelta(minutes=10))
    with pytest.raises(ValidationError) as refused:
        services.incident_edit(incident=incident, changes={"started_at": T0 + timedelta(minutes=15)})
    assert refused.value.message_dict["started_at"] == [
        "The impact on Cloud Storage ended at 2026-10-08 04:10 PDT, before this start; correct that window first."
    ]
    incident.refresh_from_db()
    window.refresh_from_db()
    assert incident.started_at == window.started_at == T0


# --- A duplicate title warns ------------------------------------------------------------------


def test_a_duplicate_title_warns_and_declares_when_confirmed(alice: Any) -> None:
    first = services.incident_declare(title="Gmail errors", created_by=alice)
    with pytest.raises(services.DuplicateTitle) as warned:
        services.incident_declare(title="  gmail   ERRORS ", created_by=alice)
    assert warned.value.existing == first
    assert first.public_id in warned.value.message_dict["title"][0]
    assert isinstance(warned.value, ValidationError)

    second = services.incident_declare(
        title="Gmail errors", confirm_duplicate_of=first.public_id, created_by=alice
    )
    assert second != first
    assert Incident.objects.count() == 2


def test_a_double_click_on_declare_anyway_files_one_incident(alice: Any) -> None:
    first = services.incident_declare(title="Gmail errors", created_by=alice)
    second = services.incident_declare(
        title="Gmail errors", confirm_duplicate_of=first.public_id, created_by=alice
    )
    with pytest.raises(services.DuplicateTitle) as warned:
        services.incident_declare(
            title="Gmail errors", confirm_duplicate_of=first.public_id, created_by=alice
        )
    assert warned.value.existing == second  # the newer one is named now
    assert Incident.objects.count() == 2


def test_confirming_another_incident_does_not_pass(alice: Any) -> None:
    other = services.incident_declare(title="Calendar errors", created_by=alice)
    services.incident_declare(title="Gmail errors", created_by=alice)
    with pytest.raises(services.DuplicateTitle):
        services.incident_declare(
            title="Gmail errors", confirm_duplicate_of=other.public_id, created_by=alice
        )
    assert Incident.objects.count() == 2
