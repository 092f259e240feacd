"""Deterministic builders for tests: explicit values, no randomness beyond public ids."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from incidents import services
from incidents.markdown import render_markdown
from incidents.models import ImpactWindow, Incident, Location, Product, ProductGroup


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[arg-type,misc]


def make_group(name: str = "Workspace", position: int = 0) -> ProductGroup:
    return ProductGroup.objects.create(name=name, position=position)


def make_product(name: str = "Gmail", *, is_public: bool = True, position: int = 0, **kw: Any) -> Product:
    slug = kw.pop("slug", name.lower().replace(" ", "-"))
    if kw.get("description"):
        # Written the way the services write it: the rendered HTML is stored beside it.
        kw.setdefault("description_html", render_markdown(kw["description"]))
    return Product.objects.create(name=name, slug=slug, is_public=is_public, position=position, **kw)


def make_location(
    name: str = "us-central1", *, kind: str = Location.Kind.REGION, parent: Location | None = None
) -> Location:
    return Location.objects.create(name=name, kind=kind, parent=parent)


def make_incident(
    *,
    title: str = "Gmail web interface unavailable",
    product: Product | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    level: str = ImpactWindow.Level.MAJOR_OUTAGE,
    impact: str = Incident.Impact.MAJOR,
    location: Location | None = None,
    **kw: Any,
) -> Incident:
    """An incident with one window on `product`; resolved at `end` when given."""
    start = start or utc(2009, 9, 1, 19, 45)
    windows = []
    if product is not None:
        windows.append(
            services.WindowSpec(
                product=product, level=level, started_at=start, ended_at=end, location=location
            )
        )
    if kw.get("kind", Incident.Kind.INCIDENT) == Incident.Kind.INCIDENT:
        # History built for a test: the first entry was posted when the impact began.
        kw.setdefault("first_update_at", start)
    incident = services.incident_open(title=title, impact=impact, started_at=start, windows=windows, **kw)
    if end is not None:
        services.incident_resolve(incident=incident, resolved_at=end, body="Resolved.")
        incident.refresh_from_db()
    return incident


def approve_report(incident: Incident, *, actor: Any = None) -> None:
    """Take a written report through review to approval, as the gate before publishing
    asks (docs/adr/0021-report-review.md); `actor=None` is the system."""
    from incidents.models import IncidentReport

    report = IncidentReport.objects.get(incident=incident)
    if report.status == IncidentReport.Status.DRAFT:
        services.report_set_status(incident=incident, status=IncidentReport.Status.IN_REVIEW, actor=actor)
    if report.status != IncidentReport.Status.APPROVED:
        services.report_approve(incident=incident, actor=actor)
