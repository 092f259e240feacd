"""Incident reports (postmortems): write, review, publish."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from incidents import events
from incidents.models import Incident, IncidentReport
from incidents.services._common import markdown_field, public_changed, require_aware, touch
from incidents.services.action_items import ActionItemChange, ActionItemRejected, action_items_save

Status = Incident.Status


@transaction.atomic
def report_save(
    *,
    incident: Incident,
    kind: str = IncidentReport.Kind.FULL,
    summary: str = "",
    root_cause: str = "",
    remediation: str = "",
    impact_description: str = "",
    actor: User | None = None,
) -> IncidentReport:
    """Create or edit the incident report. A published report stays published."""
    roles.check(actor, "report.write")
    if kind not in IncidentReport.Kind.values:
        raise ValidationError({"kind": f"Unknown report kind {kind!r}."})
    report, _ = IncidentReport.objects.select_for_update().get_or_create(incident=incident)
    report.kind = kind
    errors: dict[str, list[str]] = {}
    for name, value in (
        ("summary", summary),
        ("root_cause", root_cause),
        ("remediation", remediation),
        ("impact_description", impact_description),
    ):
        try:
            source, html = markdown_field(value, field=name)
        except ValidationError as exc:
            errors.update(exc.message_dict)  # every section's refusal, not only the first
            continue
        setattr(report, name, source)
        setattr(report, f"{name}_html", html)
    if errors:
        raise ValidationError(errors)
    report.save()
    if report.is_published:
        touch(incident)
    return report


class ReportRejected(Exception):
    """The report's sections, its action-item rows, or both were refused: every error at
    once (`report` for the sections, `items` by row index)."""

    def __init__(self, *, report: ValidationError | None, items: dict[int, ValidationError]) -> None:
        super().__init__(report, items)
        self.report = report
        self.items = items


def report_save_with_action_items(
    *,
    incident: Incident,
    items: Sequence[ActionItemChange],
    actor: User | None = None,
    keep: bool = True,
    **report: str,
) -> None:
    """The console's report page: the report and its action items, all saved or none.

    Every rule is checked before giving up, so a `ReportRejected` carries the errors of
    the sections and of every refused row together. With `keep=False` the rules are
    checked and nothing is kept (the console does so when some of the form is unreadable,
    to show the rules' errors beside the form's own).
    """
    roles.check(actor, "report.write")
    with transaction.atomic():
        report_error = None
        try:
            report_save(incident=incident, actor=actor, **report)
        except ValidationError as exc:
            report_error = exc
        item_errors: dict[int, ValidationError] = {}
        try:
            action_items_save(incident=incident, rows=items, actor=actor)
        except ActionItemRejected as rejected:
            item_errors = rejected.errors
        if report_error is not None or item_errors:
            raise ReportRejected(report=report_error, items=item_errors)
        if not keep:
            transaction.set_rollback(True)


@transaction.atomic
def report_publish(
    *, incident: Incident, published_at: datetime | None = None, actor: User | None = None
) -> IncidentReport:
    """Publish the incident report; the incident moves to `postmortem`."""
    roles.check(actor, "report.publish")
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    try:
        report = IncidentReport.objects.select_for_update().get(incident=incident)
    except IncidentReport.DoesNotExist:
        raise ValidationError("Write the incident report before publishing it.") from None
    if report.is_published:
        raise ValidationError("The incident report is already published.")
    if not incident.is_closed:
        raise ValidationError("Resolve the incident before publishing its report.")
    if not report.summary.strip():
        raise ValidationError({"summary": "A published report needs a summary."})
    require_aware(published_at, field="published_at", past=True)
    report.status = IncidentReport.Status.PUBLISHED
    report.published_at = published_at or timezone.now()
    report.save(update_fields=["status", "published_at", "updated_at"])
    if not incident.is_maintenance:
        incident.status = Status.POSTMORTEM
        incident.save(update_fields=["status", "updated_at"])
    events.announce(kind="report_published", incident=incident, report=report)
    public_changed(incident)
    return report


@transaction.atomic
def report_set_status(*, incident: Incident, status: str, actor: User | None = None) -> IncidentReport:
    """Move a report between draft and in review; publishing is `report_publish`."""
    roles.check(actor, "report.write")
    if status not in (IncidentReport.Status.DRAFT, IncidentReport.Status.IN_REVIEW):
        raise ValidationError({"status": "Use “Publish report” to publish."})
    try:
        report = IncidentReport.objects.select_for_update().get(incident=incident)
    except IncidentReport.DoesNotExist:
        raise ValidationError("Write the incident report first.") from None
    if report.is_published:
        raise ValidationError({"status": "A published report stays published."})
    if report.status != status:
        report.status = status
        report.save(update_fields=["status", "updated_at"])
    return report
