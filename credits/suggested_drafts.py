"""What reconciliation suggests where the measurement shows impact nobody declared: a
draft impact window on the incident when the incident is itself a draft, otherwise a
new draft incident (a public incident is never changed behind its readers' backs).
Reads only; `credits.services.suggested.suggested_draft_create` makes one, never
published. See docs/adr/0030-credits-from-measurements.md."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from credits import reconcile
from incidents.models import ImpactWindow, Incident

KIND_WINDOW = "window"
KIND_INCIDENT = "incident"
LEVEL = ImpactWindow.Level.PARTIAL_OUTAGE


@dataclass(frozen=True)
class Suggestion:
    product_id: int
    location_id: int | None
    start: datetime
    end: datetime
    kind: str  # KIND_WINDOW or KIND_INCIDENT
    title: str
    made: str = ""  # the public id of the draft incident already made for it


def title_for(row: reconcile.Row) -> str:
    where = f" in {row.location}" if row.location else ""
    return f"Measured impact not declared: {row.product}{where}"[:200]


def for_row(incident: Incident, row: reconcile.Row) -> list[Suggestion]:
    """One suggestion per stretch measured but not declared in this row."""
    kind = KIND_INCIDENT if incident.is_public else KIND_WINDOW
    title = title_for(row)
    return [
        Suggestion(
            product_id=row.product_id,
            location_id=row.location_id,
            start=interval.start,
            end=interval.end,
            kind=kind,
            title=title,
            made=existing_draft(row.product_id, row.location_id, interval.start, interval.end)
            if kind == KIND_INCIDENT
            else "",
        )
        for interval in row.undeclared
    ]


def existing_draft(product_id: int, location_id: int | None, start: datetime, end: datetime) -> str:
    """The public id of a draft incident holding exactly this window, or ""."""
    window = (
        ImpactWindow.objects.filter(
            incident__is_public=False,
            product_id=product_id,
            started_at=start,
            ended_at=end,
        )
        .filter(Q(location_id=location_id) if location_id is not None else Q(location__isnull=True))
        .select_related("incident")
        .first()
    )
    return window.incident.public_id if window else ""


def find(
    incident: Incident,
    rows: list[reconcile.Row],
    *,
    product_id: int,
    location_id: int | None,
    start: datetime,
    end: datetime,
) -> Suggestion | None:
    """The suggestion of `rows` with exactly these coordinates, if it still stands."""
    for row in rows:
        for suggestion in for_row(incident, row):
            if (suggestion.product_id, suggestion.location_id, suggestion.start, suggestion.end) == (
                product_id,
                location_id,
                start,
                end,
            ):
                return suggestion
    return None
