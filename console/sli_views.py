"""SLI sources in the console (/manage/sli/): list, create, edit, delete, and "test the
query", which reads the last 24 hours from Prometheus and plots them (console.sli_plot).
Thin: a form, one service or selector, render or redirect."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from console import sli_plot
from console.sli_forms import SliSourceForm
from console.views import _require, _user, console_view
from core.admin import add_validation_errors
from credits.reconcile import DEFAULT_DEFINITION
from measurements import selectors, services
from measurements.models import SliSource
from measurements.prometheus import SourceUnavailable

TEST_SPAN = timedelta(hours=24)


@console_view
def sli_sources(request: HttpRequest) -> HttpResponse:
    _require(request, "sli.manage")
    return render(request, "console/sli_sources.html", {"sources": selectors.sources_all()})


@console_view
def sli_source_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    _require(request, "sli.manage")
    source = get_object_or_404(SliSource, pk=pk) if pk is not None else None
    if request.method == "POST":
        form = SliSourceForm(request.POST)
        if form.is_valid():
            try:
                saved = services.sli_source_save(actor=_user(request), source=source, **form.cleaned_data)
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Saved the SLI source of {saved}.")
                return HttpResponseRedirect(reverse("console:sli_source_edit", args=[saved.pk]))
    else:
        form = SliSourceForm(initial=SliSourceForm.initial_for(source) if source else {"enabled": True})
    return render(request, "console/sli_source_form.html", {"form": form, "source": source})


@console_view
def sli_source_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Read the saved source over the last 24 hours and plot its error rate."""
    _require(request, "sli.manage")
    source = get_object_or_404(SliSource, pk=pk)
    minutes = DEFAULT_DEFINITION.period_minutes
    step = timedelta(minutes=minutes)
    now = timezone.now()
    end = now.replace(second=0, microsecond=0) - timedelta(minutes=now.minute % minutes)
    start = end - TEST_SPAN
    context: dict[str, object] = {
        "source": source,
        "form": SliSourceForm(initial=SliSourceForm.initial_for(source)),
    }
    try:
        counts = selectors.period_counts(source, start=start, end=end, minutes=minutes)
    except SourceUnavailable as exc:
        context["test_problem"] = f"Prometheus could not be read: {exc}"
    else:
        points = sli_plot.rates(counts)
        if points:
            threshold = DEFAULT_DEFINITION.down_above
            context["chart"] = sli_plot.plot(points, start=start, end=end, step=step, threshold=threshold)
            context["narrow_chart"] = sli_plot.plot(
                points, start=start, end=end, step=step, threshold=threshold, size=sli_plot.NARROW
            )
        else:
            context["test_problem"] = (
                "Prometheus answered, but the query returned no data for the last 24 hours: "
                "check the metric names and the label selector."
            )
    context["tested"] = {"start": start, "end": end}
    return render(request, "console/sli_source_form.html", context)


@console_view
@require_POST
def sli_source_delete(request: HttpRequest, pk: int) -> HttpResponse:
    source = get_object_or_404(SliSource, pk=pk)
    label = str(source)
    services.sli_source_delete(actor=_user(request), source=source)
    messages.success(request, f"Deleted the SLI source of {label}.")
    return HttpResponseRedirect(reverse("console:sli_sources"))
