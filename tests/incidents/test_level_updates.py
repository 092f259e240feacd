"""Updates that set product levels: the windows follow what staff said, minute by minute."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import TestCase

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
T0 = utc(2026, 11, 30, 18, 0)


@pytest.fixture
def incident() -> Incident:
    gmail = make_product("Gmail")
    return services.incident_open(
        title="Gmail errors",
        started_at=T0,
        windows=[services.WindowSpec(product=gmail, level=Level.MAJOR_OUTAGE, started_at=T0)],
    )


def _windows(incident: Incident) -> list[tuple[str, str | None, object, object]]:
    return [
        (w.level, w.location.name if w.location else None, w.started_at, w.ended_at)
        for w in incident.windows.order_by("started_at", "id")
    ]


def test_it_closes_and_opens_a_window_when_a_level_changes(incident: Incident) -> None:
    gmail = incident.windows.get().product
    changed = services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level=Level.PARTIAL_OUTAGE)],
        at=utc(2026, 11, 30, 18, 20),
    )
    assert changed == 1
    assert _windows(incident) == [
        (Level.MAJOR_OUTAGE, None, T0, utc(2026, 11, 30, 18, 20)),
        (Level.PARTIAL_OUTAGE, None, utc(2026, 11, 30, 18, 20), None),
    ]


def test_it_keeps_the_window_when_the_level_is_unchanged(incident: Incident) -> None:
    gmail = incident.windows.get().product
    changed = services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level=Level.MAJOR_OUTAGE)],
        at=utc(2026, 11, 30, 18, 20),
    )
    assert changed == 0
    assert _windows(incident) == [(Level.MAJOR_OUTAGE, None, T0, None)]


def test_it_closes_the_window_on_operational_and_reopens_on_a_new_level(incident: Incident) -> None:
    gmail = incident.windows.get().product
    services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level="operational")],
        at=utc(2026, 11, 30, 18, 30),
    )
    services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level=Level.DEGRADED_PERFORMANCE)],
        at=utc(2026, 11, 30, 19, 0),
    )
    assert _windows(incident) == [
        (Level.MAJOR_OUTAGE, None, T0, utc(2026, 11, 30, 18, 30)),
        (Level.DEGRADED_PERFORMANCE, None, utc(2026, 11, 30, 19, 0), None),
    ]


def test_it_sets_levels_per_location(incident: Incident) -> None:
    gmail = incident.windows.get().product
    zone = make_location("us-central1-b")
    services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level=Level.PARTIAL_OUTAGE, location=zone)],
        at=utc(2026, 11, 30, 18, 10),
    )
    # The all-locations window is another target: it stays as it was.
    assert _windows(incident) == [
        (Level.MAJOR_OUTAGE, None, T0, None),
        (Level.PARTIAL_OUTAGE, "us-central1-b", utc(2026, 11, 30, 18, 10), None),
    ]


def test_it_refuses_a_change_before_the_open_window_began_or_an_unknown_level(incident: Incident) -> None:
    gmail = incident.windows.get().product
    with pytest.raises(ValidationError) as error:
        services.impact_levels_set(
            incident=incident,
            levels=[services.LevelSpec(product=gmail, level="operational")],
            at=utc(2026, 11, 30, 17, 0),
        )
    assert "display_at" in error.value.error_dict
    with pytest.raises(ValidationError):
        services.impact_levels_set(
            incident=incident, levels=[services.LevelSpec(product=gmail, level="broken")], at=T0
        )
    assert _windows(incident) == [(Level.MAJOR_OUTAGE, None, T0, None)]


def test_an_update_with_levels_is_one_transaction_and_resolving_closes_everything(incident: Incident) -> None:
    gmail = incident.windows.get().product
    with pytest.raises(ValidationError):
        # An empty body is refused after the levels were applied: both roll back.
        services.incident_post_update_with_levels(
            incident=incident,
            status="monitoring",
            body="",
            levels=[services.LevelSpec(product=gmail, level="operational")],
            display_at=utc(2026, 11, 30, 18, 30),
        )
    assert _windows(incident) == [(Level.MAJOR_OUTAGE, None, T0, None)]
    services.incident_post_update_with_levels(
        incident=incident,
        status="monitoring",
        body="Recovering.",
        levels=[services.LevelSpec(product=gmail, level=Level.DEGRADED_PERFORMANCE)],
        impact=services.impact_for_levels([Level.DEGRADED_PERFORMANCE]),
        display_at=utc(2026, 11, 30, 18, 30),
    )
    incident.refresh_from_db()
    # Opened without an impact, it took its major outage's (critical), the worst it reached.
    assert (incident.status, incident.impact) == ("monitoring", "critical")
    with pytest.raises(ValidationError) as refused:
        # Resolving ends every impact: a level still out is a contradiction, not ignored.
        services.incident_post_update_with_levels(
            incident=incident,
            status="resolved",
            body="Fixed.",
            levels=[services.LevelSpec(product=gmail, level=Level.MAJOR_OUTAGE)],
            display_at=utc(2026, 11, 30, 19, 0),
        )
    assert "operational" in refused.value.message_dict["levels"][0]
    incident.refresh_from_db()
    assert incident.status == "monitoring"
    services.incident_post_update_with_levels(
        incident=incident,
        status="resolved",
        body="Fixed.",
        levels=[services.LevelSpec(product=gmail, level="operational")],
        display_at=utc(2026, 11, 30, 19, 0),
    )
    assert _windows(incident) == [
        (Level.MAJOR_OUTAGE, None, T0, utc(2026, 11, 30, 18, 30)),
        (Level.DEGRADED_PERFORMANCE, None, utc(2026, 11, 30, 18, 30), utc(2026, 11, 30, 19, 0)),
    ]


@pytest.mark.parametrize(
    ("levels", "impact"),
    [
        ([], "none"),
        (["operational", "under_maintenance"], "none"),
        (["degraded_performance"], "minor"),
        (["degraded_performance", "partial_outage"], "major"),
        (["major_outage", "degraded_performance"], "critical"),
    ],
)
def test_impact_follows_the_worst_level(levels: list[str], impact: str) -> None:
    assert services.impact_for_levels(levels) == impact


def test_publishing_a_draft_makes_it_public_and_tells_subscribers_once(incident: Incident) -> None:
    from outbox.models import OutboundMessage
    from tests.subscriptions.builders import make_subscriber

    make_subscriber("fan@example.com")
    gmail = incident.windows.get().product
    draft = services.incident_open(
        title="Quiet draft",
        started_at=T0,
        is_public=False,
        windows=[services.WindowSpec(product=gmail, level=Level.PARTIAL_OUTAGE, started_at=T0)],
    )
    before = OutboundMessage.objects.count()
    # Subscribers are reached after the commit (one event row, expanded by a task).
    with TestCase.captureOnCommitCallbacks(execute=True):
        services.incident_publish(incident=draft)
    draft.refresh_from_db()
    assert draft.is_public
    assert OutboundMessage.objects.count() == before + 1
    with TestCase.captureOnCommitCallbacks(execute=True):
        services.incident_publish(incident=draft)  # idempotent: nothing new, nobody told twice
    assert OutboundMessage.objects.count() == before + 1
