"""The incident report screen: the report's sections and its action items on one page.

A thin view like the rest of the console (console.views): parse the forms, call
incidents.services, redirect. Approvers who may publish but not write publish the
report as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.forms import BaseForm, BaseFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from console.report_forms import ActionItemFormSet, ReportForm
from console.report_selectors import report_impact_draft
from console.views import _incident, _user, console_view
from core import roles
from core.admin import add_validation_errors
from incidents import services
from incidents.models import ActionItem, Incident, IncidentReport
from postmortems import selectors as postmortem_selectors
from postmortems.follow import commitments_of
from postmortems.models import ReportTemplate
from postmortems.services import report_started


def _item_initial(item: ActionItem) -> dict[str, Any]:
    return {"item_id": item.pk, **{name: item.serializable_value(name) for name in ActionItem.ROW_FIELDS}}


@dataclass(frozen=True)
class ErrorLink:
    """One line of the error summary at the top of the page, linking to its field."""

    href: str  # "" when the error belongs to no one field
    text: str


def error_summary(form: BaseForm, formset: BaseFormSet[Any]) -> list[ErrorLink]:
    """Every error on the page, report fields first, then each action-item row, in the
    order a person reads them."""
    links = [ErrorLink("", str(e)) for e in form.non_field_errors()]
    links += _field_links(form, "")
    links += [ErrorLink("", f"Action items: {e}") for e in formset.non_form_errors()]
    for index, item in enumerate(formset.forms):
        name = f"Action item {index + 1}" + ("" if item.initial.get("item_id") else " (new)")
        links += [ErrorLink(f"#item-{index}", f"{name}: {e}") for e in item.non_field_errors()]
        links += _field_links(item, f"{name}, ")
    return links


def _field_links(form: BaseForm, prefix: str) -> list[ErrorLink]:
    return [
        ErrorLink(f"#{field.id_for_label}", f"{prefix}{field.label}: {error}")
        for field in form.visible_fields()
        for error in field.errors
    ]


@console_view
def report(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    existing = IncidentReport.objects.filter(incident=incident).first()
    items = list(incident.action_items.order_by("priority", "due_date", "id"))
    drafted = False
    error_heading = ""
    if request.method == "POST":
        form = ReportForm(request.POST)
        formset = ActionItemFormSet(request.POST, initial=[_item_initial(i) for i in items], prefix="items")
        done = _report_post(request, incident, form, formset)
        if isinstance(done, HttpResponse):
            return done
        error_heading = done
    else:
        initial: dict[str, Any] = {}
        if existing is not None:
            initial = {
                "kind": existing.kind,
                "summary": existing.summary,
                "root_cause": existing.root_cause,
                "remediation": existing.remediation,
                "impact_description": existing.impact_description,
            }
        else:
            # A new report starts from its template and the recorded impact windows.
            template = _chosen_template(request)
            if template is not None:
                initial["report_template"] = template.pk
                # The impact section is drafted from the recorded windows, not the template.
                initial.update(
                    {name: getattr(template, name) for name in ("summary", "root_cause", "remediation")}
                )
            initial["impact_description"] = report_impact_draft(incident=incident)
            drafted = bool(initial["impact_description"])
        form = ReportForm(initial=initial)
        formset = ActionItemFormSet(initial=[_item_initial(i) for i in items], prefix="items")
    report = IncidentReport.objects.filter(incident=incident).first()
    if report is not None and report.published_at is None:
        # The preview shows the publication line as it will read if published now.
        report.published_at = timezone.now()
    return render(
        request,
        "console/report.html",
        {
            "incident": incident,
            "form": form,
            "formset": formset,
            "report": report,
            "commitments": commitments_of(incident.action_items.filter(is_public=True), now=timezone.now()),
            "impact_drafted": drafted,
            "error_heading": error_heading,
            "error_links": error_summary(form, formset) if error_heading else [],
            "report_templates": list(postmortem_selectors.report_templates()) if existing is None else [],
        },
    )


def _chosen_template(request: HttpRequest) -> ReportTemplate | None:
    """The template a new report starts from: the one chosen (?report_template=), or the default."""
    pk = request.GET.get("report_template", "")
    chosen = ReportTemplate.objects.filter(pk=int(pk)).first() if pk.isdigit() else None
    return chosen or postmortem_selectors.report_template_default()


def _report_post(
    request: HttpRequest, incident: Incident, form: ReportForm, formset: Any
) -> HttpResponse | str:
    """Save (and publish) the report: a redirect when done, else the heading of the error
    summary to show above the form again.

    An approver who may publish but not write publishes the report as it stands: the
    page shows them no form to save.
    """
    user = _user(request)
    publishing = "_publish" in request.POST
    if publishing:
        # Checked before saving, so a refused publish does not leave a half-done save.
        roles.check(user, "report.publish")
    as_it_stands = publishing and not roles.allowed(user, "report.write")
    if not as_it_stands and not _save_report(incident, form, formset, user):
        return "Nothing was saved"
    if not publishing:
        messages.success(request, "Saved the incident report (not published).")
        return HttpResponseRedirect(reverse("console:report", args=[incident.public_id]) + "#preview")
    try:
        services.report_publish(incident=incident, actor=user)
    except ValidationError as exc:
        if as_it_stands:
            messages.error(request, " ".join(exc.messages))
            return HttpResponseRedirect(reverse("console:report", args=[incident.public_id]))
        add_validation_errors(form, exc)
        return "The report was saved but not published"
    messages.success(request, "Published the incident report; the incident is in postmortem.")
    return HttpResponseRedirect(reverse("console:incident", args=[incident.public_id]))


def _save_report(incident: Incident, form: ReportForm, formset: Any, user: User) -> bool:
    """Save the report and its rows, or put every error on the forms and return False.

    Rows the form cannot read are left out, but the rules still run on everything else
    (and nothing is kept), so one answer shows the form's errors and the rules' together.
    """
    readable = form.is_valid() & formset.is_valid()  # `&`: every row is checked
    if not form.is_valid():
        return False
    rows = []
    item_forms = []
    for item_form in formset.forms:
        if not item_form.is_valid() or item_form.is_blank or not set(item_form.changed_data) - {"reason"}:
            continue
        cleaned = item_form.cleaned_data
        item_id = cleaned.get("item_id") or None
        names = item_form.changed_data if item_id else ActionItem.ROW_FIELDS
        fields = {name: cleaned[name] for name in names if name in ActionItem.ROW_FIELDS}
        reason = cleaned.get("reason") or ""
        rows.append(services.ActionItemChange(item_id=item_id, fields=fields, reason=reason))
        item_forms.append(item_form)
    fields = dict(form.cleaned_data)
    template = ReportTemplate.objects.filter(pk=fields.pop("report_template") or 0).first()
    started = not IncidentReport.objects.filter(incident=incident).exists()
    try:
        services.report_save_with_action_items(
            incident=incident, items=rows, actor=user, keep=readable, **fields
        )
    except services.ReportRejected as rejected:
        if rejected.report is not None:
            add_validation_errors(form, rejected.report)
        for index, error in rejected.items.items():
            add_validation_errors(item_forms[index], error)
        return False
    if readable and started and template is not None:
        # The report began from this template: its internal reflections start from it too.
        report_started(incident=incident, template=template, actor=user)
    return readable
