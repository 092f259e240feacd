"""Incident reports (postmortems): write, review, publish.

A report moves draft -> in review -> approved -> published; only an approved report is
published, by an approver who is not its author (docs/adr/0021-report-review.md). The
review log, comments and revisions are the postmortems room's, told by `events`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from core.errors import NotApproved
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
    report, created = IncidentReport.objects.select_for_update().get_or_create(
        incident=incident, defaults={"author": actor}
    )
    before = _text(report)
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
    changed = not created and _text(report) != before
    reopened = changed and report.is_approved
    if reopened:
        # The approval was of the earlier text: the reviewers look again.
        report.status = IncidentReport.Status.IN_REVIEW
        report.approved_by = None
        report.approved_at = None
    if changed and report.is_published:
        report.revised_at = timezone.now()
    report.save()
    if reopened:
        events.announce(kind="report_status_changed", incident=incident, report=report, actor=actor)
    if report.is_published:
        if changed:
            events.announce(kind="report_revised", incident=incident, report=report, actor=actor)
        touch(incident)
    return report


def _text(report: IncidentReport) -> tuple[str, ...]:
    return (report.kind, report.summary, report.root_cause, report.remediation, report.impact_description)


def _locked_report(incident: Incident, *, missing: str) -> IncidentReport:
    try:
        return IncidentReport.objects.select_for_update().get(incident=incident)
    except IncidentReport.DoesNotExist:
        raise ValidationError(missing) from None


def check_not_author(report: IncidentReport, actor: User | None) -> None:
    """An approver reviews someone else's text: the author neither approves nor publishes it."""
    if actor is not None and report.author_id is not None and report.author_id == actor.pk:
        raise PermissionDenied("The author of a report cannot approve or publish it; ask another approver.")


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
    """Publish the approved incident report; the incident moves to `postmortem`.

    The one way a report becomes public: the console, the admin, the API and the
    `publish_report` command all come here, so none can publish an unapproved report.
    """
    roles.check(actor, "report.publish")
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    report = _locked_report(incident, missing="Write the incident report before publishing it.")
    if report.is_published:
        raise ValidationError("The incident report is already published.")
    if not incident.is_closed:
        raise ValidationError("Resolve the incident before publishing its report.")
    if not report.summary.strip():
        raise ValidationError({"summary": "A published report needs a summary."})
    if not report.is_approved:
        raise NotApproved(
            f"The report is {report.get_status_display().lower()}: an approver must approve it "
            "before it is published."
        )
    check_not_author(report, actor)
    require_aware(published_at, field="published_at", past=True)
    report.status = IncidentReport.Status.PUBLISHED
    report.published_at = published_at or timezone.now()
    report.save(update_fields=["status", "published_at", "updated_at"])
    if not incident.is_maintenance:
        incident.status = Status.POSTMORTEM
        incident.save(update_fields=["status", "updated_at"])
    events.announce(kind="report_published", incident=incident, report=report, actor=actor)
    public_changed(incident)
    return report


@transaction.atomic
def report_approve(*, incident: Incident, actor: User | None = None) -> IncidentReport:
    """An approver approves the report in review, as it stands, for publication."""
    roles.check(actor, "report.publish")
    report = _locked_report(incident, missing="Write the incident report first.")
    if report.status != IncidentReport.Status.IN_REVIEW:
        raise ValidationError(
            f"Only a report in review can be approved; this one is {report.get_status_display().lower()}."
        )
    check_not_author(report, actor)
    report.status = IncidentReport.Status.APPROVED
    report.approved_by = actor
    report.approved_at = timezone.now()
    report.save(update_fields=["status", "approved_by", "approved_at", "updated_at"])
    events.announce(kind="report_status_changed", incident=incident, report=report, actor=actor)
    return report


@transaction.atomic
def report_set_status(*, incident: Incident, status: str, actor: User | None = None) -> IncidentReport:
    """Move a report between draft and in review (an approved one back as well, which
    withdraws the approval); approving is `report_approve`, publishing `report_publish`."""
    if status not in (IncidentReport.Status.DRAFT, IncidentReport.Status.IN_REVIEW):
        raise ValidationError({"status": "Use “Approve” to approve and “Publish report” to publish."})
    report = _locked_report(incident, missing="Write the incident report first.")
    # Sending a report back for changes is a reviewer's act as well as the author's.
    if not (roles.allowed(actor, "report.publish") and report.status != IncidentReport.Status.DRAFT):
        roles.check(actor, "report.write")
    if report.is_published:
        raise ValidationError({"status": "A published report stays published."})
    if report.status != status:
        report.status = status
        report.approved_by = None
        report.approved_at = None
        report.save(update_fields=["status", "approved_by", "approved_at", "updated_at"])
        events.announce(kind="report_status_changed", incident=incident, report=report, actor=actor)
    return report
