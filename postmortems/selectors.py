"""Reads of the postmortems room: a report's review log and reviewers, its revisions,
factors and reflections, and the report templates."""

from __future__ import annotations

from django.db.models import QuerySet

from postmortems.models import (
    ContributingFactor,
    Reflection,
    ReportRevision,
    ReportTemplate,
    ReviewEvent,
    ReviewRequest,
)


def review_log(*, report_id: int) -> QuerySet[ReviewEvent]:
    return (
        ReviewEvent.objects.filter(report_id=report_id).select_related("actor").order_by("created_at", "pk")
    )


def review_requests(*, report_id: int) -> QuerySet[ReviewRequest]:
    return ReviewRequest.objects.filter(report_id=report_id).select_related("reviewer", "requested_by")


def report_revisions(*, report_id: int) -> QuerySet[ReportRevision]:
    """Newest first: the first is the text the public page shows."""
    return (
        ReportRevision.objects.filter(report_id=report_id).select_related("published_by").order_by("-number")
    )


def report_factors(*, report_id: int, public_only: bool = False) -> QuerySet[ContributingFactor]:
    factors = ContributingFactor.objects.filter(report_id=report_id)
    return factors.filter(is_public=True) if public_only else factors


def report_reflections(*, report_id: int) -> dict[str, Reflection]:
    return {r.section: r for r in Reflection.objects.filter(report_id=report_id)}


def report_templates() -> QuerySet[ReportTemplate]:
    return ReportTemplate.objects.order_by("-is_default", "name")


def report_template_default() -> ReportTemplate | None:
    return report_templates().first()
