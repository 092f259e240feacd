"""Builders shared by the public page tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from incidents import services
from incidents.models import ImpactWindow, Incident, Product
from tests.builders import approve_report

Level = ImpactWindow.Level


def add_window(
    incident: Incident,
    product: Product,
    start: datetime,
    end: datetime | None = None,
    level: str = Level.PARTIAL_OUTAGE,
    **kw: Any,
) -> ImpactWindow:
    return services.impact_window_add(
        incident=incident, product=product, level=level, started_at=start, ended_at=end, **kw
    )


def publish_report(incident: Incident, *, summary: str = "What happened.", **kw: Any) -> None:
    services.report_save(incident=incident, summary=summary, **kw)
    approve_report(incident)
    services.report_publish(incident=incident, published_at=incident.resolved_at)
