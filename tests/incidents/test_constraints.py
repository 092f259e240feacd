"""The database itself refuses bad rows, whatever path they come by.

Each case goes around the services and model validation (QuerySet.update, bulk_create)
so that only the CHECK constraints stand in the way.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
    IncidentUpdate,
    Location,
)
from tests.builders import make_incident, make_location, make_product, utc

pytestmark = pytest.mark.django_db

T0 = utc(2026, 10, 8, 11, 0)


@pytest.fixture
def incident() -> Incident:
    return make_incident(product=make_product("Gmail"), start=T0, end=T0 + timedelta(hours=1))


def refused(action: Callable[[], Any]) -> None:
    # The savepoint keeps the test's transaction usable on PostgreSQL after the error.
    with pytest.raises(IntegrityError), transaction.atomic():
        action()


@pytest.mark.parametrize(
    ("model", "field", "value"),
    [
        (Incident, "status", "exploded"),
        (Incident, "impact", "huge"),  # short: must hit the CHECK, not the length limit
        (Incident, "kind", "outage"),
        (ImpactWindow, "level", "meltdown"),
        (IncidentUpdate, "status", "guessing"),
        (IncidentReport, "kind", "novel"),
        (IncidentReport, "status", "leaked"),
        (ActionItem, "type", "pray"),
        (ActionItem, "priority", "P9"),
        (ActionItem, "status", "forgotten"),
        (Location, "kind", "planet"),
    ],
)
def test_it_refuses_an_unknown_enum_value(incident: Incident, model: Any, field: str, value: str) -> None:
    IncidentReport.objects.create(incident=incident, summary="s")
    ActionItem.objects.create(incident=incident, title="t")
    make_location("us-central1")
    before = list(model.objects.values_list(field, flat=True))

    refused(lambda: model.objects.update(**{field: value}))

    assert list(model.objects.values_list(field, flat=True)) == before


def test_it_refuses_a_window_that_ends_before_it_starts(incident: Incident) -> None:
    product = incident.windows.get().product
    bad = ImpactWindow(
        incident=incident,
        product=product,
        level="partial_outage",
        started_at=T0,
        ended_at=T0 - timedelta(minutes=1),
    )

    refused(lambda: ImpactWindow.objects.bulk_create([bad]))
    refused(lambda: ImpactWindow.objects.update(ended_at=T0 - timedelta(minutes=1)))

    assert incident.windows.count() == 1
    assert incident.windows.get().ended_at == T0 + timedelta(hours=1)
    # An empty window (end == start) is allowed: half-open, zero length.
    ImpactWindow.objects.update(ended_at=T0)


@pytest.mark.parametrize("field", ["resolved_at", "detected_at", "mitigated_at"])
def test_it_refuses_incident_times_before_the_start(incident: Incident, field: str) -> None:
    refused(lambda: Incident.objects.update(**{field: T0 - timedelta(seconds=1)}))
    incident.refresh_from_db()
    assert getattr(incident, field) != T0 - timedelta(seconds=1)


def test_it_refuses_a_status_of_the_wrong_kind(incident: Incident) -> None:
    refused(lambda: Incident.objects.update(status=Incident.Status.SCHEDULED))
    refused(
        lambda: Incident.objects.bulk_create(
            [Incident(title="m", kind="maintenance", status="investigating", started_at=T0, scheduled_for=T0)]
        )
    )
    assert Incident.objects.get().status == Incident.Status.RESOLVED


def test_it_refuses_a_maintenance_without_a_schedule_or_with_it_reversed() -> None:
    refused(
        lambda: Incident.objects.bulk_create(
            [Incident(title="m", kind="maintenance", status="scheduled", started_at=T0)]
        )
    )
    refused(
        lambda: Incident.objects.bulk_create(
            [
                Incident(
                    title="m",
                    kind="maintenance",
                    status="scheduled",
                    started_at=T0,
                    scheduled_for=T0,
                    scheduled_until=T0 - timedelta(hours=1),
                )
            ]
        )
    )
    assert Incident.objects.count() == 0


def test_it_refuses_a_published_report_without_a_time(incident: Incident) -> None:
    IncidentReport.objects.create(incident=incident, summary="s")
    refused(lambda: IncidentReport.objects.update(status="published"))
    assert IncidentReport.objects.get().status == "draft"


def test_it_refuses_self_references(incident: Incident) -> None:
    region = make_location("us-central1")
    refused(lambda: Location.objects.filter(pk=region.pk).update(parent=region))
    refused(lambda: Incident.objects.filter(pk=incident.pk).update(recurrence_of=incident))
    region.refresh_from_db()
    incident.refresh_from_db()
    assert region.parent is None and incident.recurrence_of is None


def test_it_refuses_a_second_report_for_an_incident(incident: Incident) -> None:
    IncidentReport.objects.create(incident=incident, summary="first")
    refused(lambda: IncidentReport.objects.bulk_create([IncidentReport(incident=incident, summary="second")]))
    assert IncidentReport.objects.get().summary == "first"
