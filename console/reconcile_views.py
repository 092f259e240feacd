"""The reconciliation page: an incident's declared windows beside the measured downtime
(credits.reconcile), per product and location."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from console.views import console_view
from core import roles
from credits import reconcile
from incidents.intervals import Interval
from incidents.models import Incident


@dataclass(frozen=True)
class Bar:
    x: float
    width: float


def _bars(intervals: list[Interval], lo: datetime, hi: datetime) -> list[Bar]:
    span = (hi - lo).total_seconds() or 1.0
    return [
        Bar(
            round(1000 * (iv.start - lo).total_seconds() / span, 1),
            max(2.0, round(1000 * iv.duration.total_seconds() / span, 1)),
        )
        for iv in intervals
    ]


@console_view
def incident_reconciliation(request: HttpRequest, pk: int) -> HttpResponse:
    roles.check(request.user, "credits.review")
    incident = get_object_or_404(Incident, pk=pk)
    rows = []
    for row in reconcile.incident_reconciliation(incident):
        everything = [*row.declared, *row.measured, *row.gaps, *([row.span] if row.span else [])]
        lo, hi = min(iv.start for iv in everything), max(iv.end for iv in everything)
        rows.append(
            {
                "row": row,
                "declared_bars": _bars(row.declared, lo, hi),
                "measured_bars": _bars(row.measured, lo, hi),
                "gap_bars": _bars(row.gaps, lo, hi),
                "lo": lo,
                "hi": hi,
            }
        )
    return render(request, "console/reconciliation.html", {"incident": incident, "rows": rows})
