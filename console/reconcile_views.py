"""The reconciliation page: an incident's declared windows beside the measured downtime
(credits.reconcile), per product and location."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from console.views import _user, console_view
from core import roles
from credits import reconcile, suggested_drafts
from credits.services.suggested import suggested_draft_create
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
                "suggestions": suggested_drafts.for_row(incident, row),
                "lo": lo,
                "hi": hi,
            }
        )
    return render(request, "console/reconciliation.html", {"incident": incident, "rows": rows})


class SuggestedDraftForm(forms.Form):
    product = forms.IntegerField(min_value=1)
    location = forms.IntegerField(min_value=1, required=False)
    start = forms.DateTimeField()
    end = forms.DateTimeField()


@console_view
@require_POST
def suggested_draft(request: HttpRequest, pk: int) -> HttpResponse:
    """Make the draft incident (or draft window) a suggestion offers; never published."""
    roles.check(request.user, "credits.review")
    incident = get_object_or_404(Incident, pk=pk)
    back = reverse("console:incident_reconciliation", args=[incident.pk])
    form = SuggestedDraftForm(request.POST)
    if not form.is_valid():
        messages.error(request, "That suggestion could not be read. Reload the page.")
        return HttpResponseRedirect(back)
    data = form.cleaned_data
    try:
        draft = suggested_draft_create(
            actor=_user(request),
            incident=incident,
            product_id=data["product"],
            location_id=data["location"],
            start=data["start"],
            end=data["end"],
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return HttpResponseRedirect(back)
    messages.success(
        request, f"Draft saved, not published: “{draft.title}”. Publish or delete it from its page."
    )
    return HttpResponseRedirect(reverse("console:incident", args=[draft.public_id]))
