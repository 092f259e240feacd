"""Review of incident reports: requests, comments, approval, sending back, and the log.

The transitions themselves are the incident room's (`incidents.services.report_*`), so
the gate before publishing stays in its one write path; this module adds who was asked
to review and what was said, and keeps the log of every transition through the event
registry (`on_incident_event`). Design: docs/adr/0021-report-review.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from core import roles
from incidents import events, services
from incidents.models import Incident, IncidentReport
from postmortems.models import ReportRevision, ReviewEvent, ReviewRequest

# What a comment may be about: a report section, a reflection, or a timeline entry
# ("timeline:<id>", kept as text so the log outlives the entry).
SECTION_ANCHORS: dict[str, str] = {
    "": "The whole report",
    "summary": "Summary",
    "impact_description": "Detailed description of impact",
    "root_cause": "Root cause",
    "remediation": "Remediation and prevention",
    "factors": "Contributing factors",
    "went_well": "What went well",
    "went_wrong": "What went wrong",
    "got_lucky": "Where we got lucky",
}
TIMELINE_PREFIX = "timeline:"


def check_anchor(anchor: str) -> str:
    anchor = (anchor or "").strip()
    if anchor in SECTION_ANCHORS:
        return anchor
    entry = anchor.removeprefix(TIMELINE_PREFIX)
    if anchor.startswith(TIMELINE_PREFIX) and entry.isdigit():
        return anchor
    raise ValidationError(
        {"anchor": f"Comment on a section of the report or on “{TIMELINE_PREFIX}<entry id>”."}
    )


def _report(incident: Incident) -> IncidentReport:
    try:
        return IncidentReport.objects.get(incident=incident)
    except IncidentReport.DoesNotExist:
        raise ValidationError("Write the incident report first.") from None


def _comment(report: IncidentReport, *, actor: User | None, body: str, anchor: str = "") -> ReviewEvent:
    source, html = services.markdown_field(body, field="body", required=True)
    return ReviewEvent.objects.create(
        report=report,
        kind=ReviewEvent.Kind.COMMENT,
        actor=actor,
        anchor=check_anchor(anchor),
        body=source,
        body_html=html,
    )


@transaction.atomic
def review_request(
    *, incident: Incident, reviewers: Sequence[User], actor: User | None = None
) -> IncidentReport:
    """The author asks reviewers to look at the report; it moves to in review."""
    roles.check(actor, "report.write")
    if not reviewers:
        raise ValidationError({"reviewers": "Choose at least one reviewer."})
    report = _report(incident)
    for reviewer in reviewers:
        if not roles.allowed(reviewer, "report.publish"):
            raise ValidationError({"reviewers": f"{reviewer} does not hold the Report approver role."})
        if actor is not None and reviewer.pk == actor.pk:
            raise ValidationError({"reviewers": "Ask someone other than yourself to review."})
        ReviewRequest.objects.get_or_create(
            report=report, reviewer=reviewer, defaults={"requested_by": actor}
        )
    if report.status != IncidentReport.Status.IN_REVIEW:
        report = services.report_set_status(
            incident=incident, status=IncidentReport.Status.IN_REVIEW, actor=actor
        )
    return report


@transaction.atomic
def review_comment(
    *, incident: Incident, body: str, anchor: str = "", actor: User | None = None
) -> ReviewEvent:
    """A comment on the report, one of its sections or a timeline entry."""
    if not (roles.allowed(actor, "report.publish") or actor is None):
        roles.check(actor, "report.write")
    report = _report(incident)
    return _comment(report, actor=actor, body=body, anchor=anchor)


@transaction.atomic
def review_approve(*, incident: Incident, comment: str = "", actor: User | None = None) -> IncidentReport:
    """An approver (not the author) approves the report as it stands."""
    report = services.report_approve(incident=incident, actor=actor)
    if comment.strip():
        _comment(report, actor=actor, body=comment)
    return report


@transaction.atomic
def review_request_changes(
    *, incident: Incident, comment: str, anchor: str = "", actor: User | None = None
) -> IncidentReport:
    """A reviewer sends the report back to its author, saying what to change."""
    roles.check(actor, "report.publish")
    report = _report(incident)
    if report.status not in (IncidentReport.Status.IN_REVIEW, IncidentReport.Status.APPROVED):
        raise ValidationError("Only a report in review (or approved) can be sent back for changes.")
    if not comment.strip():
        raise ValidationError({"comment": "Say what should change."})
    _comment(report, actor=actor, body=comment, anchor=anchor)
    return services.report_set_status(incident=incident, status=IncidentReport.Status.DRAFT, actor=actor)


def on_incident_event(event: events.IncidentEvent) -> None:
    """Keep every transition in the log, and the text of every publication."""
    report = event.report
    if report is None or event.kind not in ("report_status_changed", "report_published", "report_revised"):
        return
    if event.kind != "report_revised":
        ReviewEvent.objects.create(
            report=report, kind=ReviewEvent.Kind.TRANSITION, status=report.status, actor=event.actor
        )
    if event.kind == "report_status_changed":
        return
    if event.kind == "report_revised":
        ReviewEvent.objects.create(report=report, kind=ReviewEvent.Kind.REVISION, actor=event.actor)
    _keep_revision(report, actor=event.actor, revised=event.kind == "report_revised")


def _keep_revision(report: IncidentReport, *, actor: User | None, revised: bool) -> ReportRevision:
    last = ReportRevision.objects.filter(report=report).aggregate(n=Max("number"))["n"] or 0
    when = report.revised_at if revised else report.published_at
    assert when is not None
    return ReportRevision.objects.create(
        report=report,
        number=last + 1,
        kind=report.kind,
        summary_html=report.summary_html,
        root_cause_html=report.root_cause_html,
        remediation_html=report.remediation_html,
        impact_description_html=report.impact_description_html,
        published_at=when,
        published_by=actor,
    )
