"""The recorded impact is the worst an incident reached; the open-incident banner follows
the current levels; resolving ends every impact (docs/adr/0013-posted-and-shown-times.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from freezegun import freeze_time

from incidents import selectors, services
from incidents.models import ImpactWindow, Incident
from public_site.pages import status_page
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
T0 = utc(2026, 10, 8, 11, 0)
NOW = T0 + timedelta(hours=3)


@pytest.fixture
def incident() -> Incident:
    gmail = make_product("Gmail")
    with freeze_time(T0 + timedelta(minutes=5)):
        return services.incident_open(
            title="Gmail errors",
            impact=Incident.Impact.MAJOR,
            started_at=T0,
            windows=[services.WindowSpec(product=gmail, level=Level.PARTIAL_OUTAGE, started_at=T0)],
        )


def _levels(incident: Incident, level: str) -> list[services.LevelSpec]:
    return [services.LevelSpec(product=incident.windows.first().product, level=level)]  # type: ignore[union-attr]


def _update(incident: Incident, minutes: int, level: str, status: str = "identified", **kw) -> None:  # type: ignore[no-untyped-def]
    services.incident_post_update_with_levels(
        incident=incident,
        status=status,
        body=f"{level} at +{minutes} min.",
        levels=_levels(incident, level),
        display_at=T0 + timedelta(minutes=minutes),
        **kw,
    )


def _banner() -> tuple[str, str, list[str]]:
    summary = selectors.status_summary(now=NOW)
    page = status_page(now=NOW)
    assert page.banner == summary.banner  # the page and the API say the same
    return summary.banner.indicator, page.banner.indicator, list(summary.unresolved_impacts)


@freeze_time(NOW)
def test_updates_raise_the_recorded_impact_and_never_lower_it(incident: Incident) -> None:
    _update(incident, 10, Level.MAJOR_OUTAGE)
    incident.refresh_from_db()
    assert incident.impact == "critical"

    _update(incident, 20, Level.DEGRADED_PERFORMANCE, impact="minor")  # a lower impact said
    incident.refresh_from_db()
    assert incident.impact == "critical"  # the worst it reached

    # The banner, though, shows the recovery: the product is degraded now.
    assert _banner() == ("minor", "minor", ["minor"])

    _update(incident, 30, "operational", status="monitoring")
    assert _banner() == ("none", "none", ["none"])
    incident.refresh_from_db()
    assert incident.impact == "critical"


@freeze_time(NOW)
def test_an_edit_is_the_explicit_correction(incident: Incident) -> None:
    _update(incident, 10, Level.MAJOR_OUTAGE)
    services.incident_edit(incident=incident, changes={"impact": "major"})
    incident.refresh_from_db()
    assert incident.impact == "major"


@freeze_time(NOW)
def test_an_incident_without_windows_counts_its_recorded_impact() -> None:
    services.incident_open(title="Something is wrong", impact=Incident.Impact.MAJOR, started_at=T0)
    assert _banner() == ("major", "major", ["major"])


@freeze_time(NOW)
def test_windows_on_staff_only_products_do_not_colour_the_banner(incident: Incident) -> None:
    billing = make_product("Billing export", is_public=False)
    services.incident_levels_change(
        incident=incident,
        levels=[
            services.LevelSpec(product=incident.windows.get().product, level="operational"),
            services.LevelSpec(product=billing, level=Level.MAJOR_OUTAGE),
        ],
        at=T0 + timedelta(minutes=30),
    )
    assert _banner() == ("none", "none", ["none"])


@freeze_time(NOW)
def test_resolving_refuses_levels_still_out_and_changes_nothing(incident: Incident) -> None:
    with pytest.raises(ValidationError) as refused:
        _update(incident, 40, Level.DEGRADED_PERFORMANCE, status="resolved")
    assert refused.value.message_dict["levels"] == [
        "Resolving ends every impact; set every product operational or post a monitoring update."
    ]
    incident.refresh_from_db()
    assert incident.status == "investigating" and incident.resolved_at is None
    assert incident.windows.get().ended_at is None
    assert incident.updates.count() == 1


@freeze_time(NOW)
def test_resolving_with_operational_levels_records_the_impact_given(incident: Incident) -> None:
    _update(incident, 10, Level.MAJOR_OUTAGE)
    _update(incident, 40, "operational", status="resolved", impact="major")

    incident.refresh_from_db()
    assert (incident.status, incident.resolved_at, incident.impact) == (
        "resolved",
        T0 + timedelta(minutes=40),
        "major",
    )
    assert incident.windows.filter(ended_at__isnull=True).count() == 0
    assert _banner() == ("none", "none", [])


@freeze_time(NOW)
def test_resolving_without_an_impact_keeps_the_worst(incident: Incident) -> None:
    _update(incident, 10, Level.MAJOR_OUTAGE)
    _update(incident, 20, Level.PARTIAL_OUTAGE)
    _update(incident, 40, "operational", status="resolved")

    incident.refresh_from_db()
    assert incident.impact == "critical"  # the resolved incident says what it reached
