"""Resolving from the console with levels (issue 28): a level left non-operational is a
clear form error, and the overall impact chosen is the incident's final recorded impact."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, TestCase

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    gmail = make_product("Gmail", position=1)
    drive = make_product("Drive", position=2)
    incident = services.incident_open(
        title="Workspace errors",
        impact=Incident.Impact.CRITICAL,
        started_at=utc(2026, 11, 30, 18, 0),
        body="Investigating.",
        windows=[
            services.WindowSpec(product=gmail, level=Level.MAJOR_OUTAGE, started_at=utc(2026, 11, 30, 18)),
            services.WindowSpec(product=drive, level=Level.PARTIAL_OUTAGE, started_at=utc(2026, 11, 30, 18)),
        ],
    )
    return {
        "incident": incident,
        "gmail": gmail,
        "drive": drive,
        "url": f"/manage/incidents/{incident.public_id}/update/?resolve=1",
    }


def _resolve(world: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "status": "resolved",
        "body": "Fixed.",
        "display_at": "2026-11-30T11:00",  # US/Pacific: 19:00 UTC
        f"level_{world['gmail'].pk}_0": "operational",
        f"level_{world['drive'].pk}_0": "operational",
        "impact": "",
        "notify": "on",
        "_post": "1",
        **extra,
    }


def test_the_resolve_form_says_what_the_impact_and_levels_mean(
    staff_client: Client, world: dict[str, Any]
) -> None:
    form = staff_client.get(world["url"]).context["form"]
    help_text = form.fields["impact"].help_text
    assert "Recorded as the incident's final impact" in help_text
    assert "every level above must be operational" in help_text
    assert form.fields["impact"].choices[0] == ("", "Keep the worst reached (Critical)")
    update_form = staff_client.get(world["url"].replace("?resolve=1", "")).context["form"]
    assert "recorded as the incident's final impact" in update_form.fields["impact"].help_text


def test_a_level_left_non_operational_is_a_clear_error_and_changes_nothing(
    staff_client: Client, world: dict[str, Any]
) -> None:
    incident: Incident = world["incident"]
    data = _resolve(world, **{f"level_{world['drive'].pk}_0": Level.DEGRADED_PERFORMANCE})
    response = post(staff_client, world["url"], data)
    assert response.status_code == 200
    errors = response.context["form"].non_field_errors()
    assert len(errors) == 1 and errors[0].startswith("Resolving ends every impact"), errors
    assert not errors[0].startswith("levels:")
    assert "Resolving ends every impact" in response.content.decode()
    form = response.context["form"]
    assert form.errors[f"level_{world['drive'].pk}_0"] == ["Set this operational to resolve."]
    assert f"level_{world['gmail'].pk}_0" not in form.errors
    incident.refresh_from_db()
    assert incident.status == "investigating" and incident.resolved_at is None
    assert incident.windows.filter(ended_at__isnull=True).count() == 2
    assert incident.updates.count() == 1


def test_the_chosen_impact_is_the_final_recorded_impact(staff_client: Client, world: dict[str, Any]) -> None:
    incident: Incident = world["incident"]
    response = post(staff_client, world["url"], _resolve(world, impact=Incident.Impact.MAJOR))
    assert response.status_code == 302, response.content.decode()
    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.resolved_at == utc(2026, 11, 30, 19)
    assert incident.impact == Incident.Impact.MAJOR


def test_resolving_without_a_choice_keeps_the_worst_impact(
    staff_client: Client, world: dict[str, Any]
) -> None:
    """All levels operational must not read as "no impact": the worst reached stays."""
    incident: Incident = world["incident"]
    assert post(staff_client, world["url"], _resolve(world)).status_code == 302
    incident.refresh_from_db()
    assert incident.status == "resolved"
    assert incident.impact == Incident.Impact.CRITICAL
