"""`run_periodic` runs the beat schedule in process (the embedded mode has no beat)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_product

pytestmark = pytest.mark.django_db


def test_it_runs_every_scheduled_task_once_and_moves_due_maintenance() -> None:
    bigquery = make_product("BigQuery")
    start = timezone.now() - timedelta(minutes=5)
    maintenance = services.incident_open(
        title="BigQuery storage upgrade",
        kind=Incident.Kind.MAINTENANCE,
        impact=Incident.Impact.NONE,
        scheduled_for=start,
        scheduled_until=start + timedelta(hours=2),
        windows=[
            services.WindowSpec(
                product=bigquery,
                level=ImpactWindow.Level.UNDER_MAINTENANCE,
                started_at=start,
                ended_at=start + timedelta(hours=2),
            )
        ],
    )
    out = io.StringIO()
    call_command("run_periodic", "--once", stdout=out)
    text = out.getvalue()
    assert "outbox-sweep: ok" in text
    assert "incidents-maintenance-advance: ok" in text
    maintenance.refresh_from_db()
    assert maintenance.status == Incident.Status.IN_PROGRESS
