"""The report's review screen, its factors and reflections, and the report templates.

Thin views like the rest of the console: parse a form, call one service of
postmortems (or incidents.services.report_publish, the one way to publish), redirect.
Design: docs/adr/0021-report-review.md.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.forms import BaseForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from console.review_forms import (
    FactorFormSet,
    ReflectionsForm,
    ReportTemplateForm,
    ReviewCommentForm,
    ReviewRequestForm,
    ReviewVerdictForm,
)
from console.views import _incident, _require, _user, console_view
from core.admin import add_validation_errors
from incidents import services
from incidents.models import Incident, IncidentReport
from postmortems import review, selectors
from postmortems import services as postmortem_services
from postmortems.models import ReportTemplate
from postmortems.review import SECTION_ANCHORS


def _report_or_none(incident: Incident) -> IncidentReport | None:
    return IncidentReport.objects.filter(incident=incident).select_related("author", "approved_by").first()


def _review_url(incident: Incident) -> str:
    return reverse("console:report_review", args=[incident.public_id])


@console_view
def report_review(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    report = _report_or_none(incident)
    user = _user(request)
    forms: dict[str, BaseForm] = {
        "request_form": ReviewRequestForm(exclude=user.pk),
        "comment_form": ReviewCommentForm(prefix="comment"),
        "verdict_form": ReviewVerdictForm(prefix="verdict"),
    }
    if request.method == "POST" and report is not None:
        done = _review_post(request, incident, forms)
        if done is not None:
            return done
    context: dict[str, Any] = {"incident": incident, "report": report, **forms}
    if report is not None:
        context.update(
            log=list(selectors.review_log(report_id=report.pk)),
            reviewers=list(selectors.review_requests(report_id=report.pk)),
            revisions=list(selectors.report_revisions(report_id=report.pk)),
            anchors=SECTION_ANCHORS,
            is_author=report.author_id == user.pk,
        )
    return render(request, "console/report_review.html", context)


def _review_post(request: HttpRequest, incident: Incident, forms: dict[str, BaseForm]) -> HttpResponse | None:
    """Take the one step the button names; None when a form has errors to show."""
    user = _user(request)
    step = next(
        (
            name
            for name in ("_request", "_comment", "_approve", "_changes", "_publish")
            if name in request.POST
        ),
        "",
    )
    form: BaseForm | None = None
    try:
        if step == "_request":
            form = forms["request_form"] = ReviewRequestForm(request.POST, exclude=user.pk)
            if not form.is_valid():
                return None
            review.review_request(
                incident=incident, reviewers=list(form.cleaned_data["reviewers"]), actor=user
            )
            done = "Asked for review; the report is in review."
        elif step == "_comment":
            form = forms["comment_form"] = ReviewCommentForm(request.POST, prefix="comment")
            if not form.is_valid():
                return None
            review.review_comment(incident=incident, actor=user, **form.cleaned_data)
            done = "Comment added."
        elif step in ("_approve", "_changes"):
            form = forms["verdict_form"] = ReviewVerdictForm(request.POST, prefix="verdict")
            if not form.is_valid():
                return None
            data = form.cleaned_data
            if step == "_approve":
                review.review_approve(incident=incident, comment=data["comment"], actor=user)
                done = "Approved the report; it can be published."
            else:
                review.review_request_changes(
                    incident=incident, comment=data["comment"], anchor=data["anchor"], actor=user
                )
                done = "Sent the report back to its author for changes."
        elif step == "_publish":
            services.report_publish(incident=incident, actor=user)
            messages.success(request, "Published the incident report; the incident is in postmortem.")
            return HttpResponseRedirect(reverse("console:incident", args=[incident.public_id]))
        else:
            return HttpResponseRedirect(_review_url(incident))
    except ValidationError as refused:
        if form is None:
            messages.error(request, " ".join(refused.messages))
            return HttpResponseRedirect(_review_url(incident))
        add_validation_errors(form, refused)
        return None
    messages.success(request, done)
    return HttpResponseRedirect(_review_url(incident) + "#log")


@console_view
def report_factors(request: HttpRequest, public_id: str) -> HttpResponse:
    """Contributing factors and the three reflections of the report."""
    incident = _incident(request, public_id)
    report = get_object_or_404(IncidentReport, incident=incident)
    reflections = selectors.report_reflections(report_id=report.pk)
    factors = list(selectors.report_factors(report_id=report.pk))
    initial_factors = [
        {"kind": f.kind, "description": f.description, "is_public": f.is_public} for f in factors
    ]
    if request.method == "POST":
        _require(request, "report.write")
        form = ReflectionsForm(request.POST)
        formset = FactorFormSet(request.POST, initial=initial_factors, prefix="factors")
        if form.is_valid() and formset.is_valid() and _save_factors(request, incident, form, formset):
            messages.success(request, "Saved the contributing factors and reflections.")
            return HttpResponseRedirect(reverse("console:report_factors", args=[incident.public_id]))
    else:
        initial: dict[str, Any] = {}
        for section, reflection in reflections.items():
            initial[section] = reflection.body
            initial[f"{section}_public"] = reflection.is_public
        form = ReflectionsForm(initial=initial)
        formset = FactorFormSet(initial=initial_factors, prefix="factors")
    return render(
        request,
        "console/report_factors.html",
        {"incident": incident, "report": report, "form": form, "formset": formset},
    )


def _save_factors(request: HttpRequest, incident: Incident, form: ReflectionsForm, formset: Any) -> bool:
    rows = [
        postmortem_services.FactorRow(
            kind=f.cleaned_data["kind"],
            description=f.cleaned_data["description"],
            is_public=f.cleaned_data["is_public"],
        )
        for f in formset.forms
        if f.cleaned_data.get("kind") or (f.cleaned_data.get("description") or "").strip()
    ]
    try:
        postmortem_services.report_insights_save(
            incident=incident,
            factors=rows,
            reflections={
                section: (form.cleaned_data[section], form.cleaned_data[f"{section}_public"])
                for section in ReportTemplate.REFLECTIONS
            },
            actor=_user(request),
        )
    except ValidationError as refused:
        add_validation_errors(form, ValidationError(refused.messages))
        return False
    return True


@console_view
def report_templates(request: HttpRequest) -> HttpResponse:
    return render(request, "console/report_templates.html", {"templates": list(selectors.report_templates())})


@console_view
def report_template_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """One report template's form, new or edited (organisations write their own)."""
    _require(request, "template.write")
    template = get_object_or_404(ReportTemplate, pk=pk) if pk is not None else None
    form = ReportTemplateForm(instance=template)
    if request.method == "POST":
        # The form checks its own copy: the service compares against the stored template.
        form = ReportTemplateForm(
            request.POST, instance=ReportTemplate.objects.filter(pk=pk).first() if pk else None
        )
        if form.is_valid():
            try:
                saved = postmortem_services.report_template_save(
                    template=template, actor=_user(request), **form.cleaned_data
                )
            except ValidationError as refused:
                add_validation_errors(form, refused)
            else:
                messages.success(request, f"Saved the report template “{saved.name}”.")
                return HttpResponseRedirect(reverse("console:report_templates"))
    return render(request, "console/report_template_form.html", {"template": template, "form": form})
