"""The demo's reports go through review before they are published, as every report must
(docs/adr/0021-report-review.md): the responder writes and asks, the approver comments,
approves and publishes, all through the services the console and the API call."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from incidents import services
from incidents.models import Incident, IncidentReport
from postmortems import review
from postmortems.models import ReviewEvent, ReviewRequest

AUTHOR = "responder"
APPROVER = "approver"

# The one review comment the Cloud Storage 2026 report carries in its log.
GCS_COMMENT = (
    "root_cause",
    "Say that the zonal recurrence on 9 October came from the same overloaded metadata "
    "tier, so readers do not take it for a second, unrelated fault.",
)


def author() -> User:
    """The demo's report author (the Responder login)."""
    return get_user_model().objects.get(username=AUTHOR)


def publish_reviewed(
    incident: Incident, *, published_at: datetime, comment: tuple[str, str] | None = None
) -> None:
    """Request review from the approver, comment (optionally), approve, publish."""
    approver = get_user_model().objects.get(username=APPROVER)
    review.review_request(incident=incident, reviewers=[approver], actor=author())
    if comment is not None:
        anchor, body = comment
        review.review_comment(incident=incident, body=body, anchor=anchor, actor=approver)
    review.review_approve(incident=incident, actor=approver)
    services.report_publish(incident=incident, published_at=published_at, actor=approver)
    _backdate(incident, published_at)


def _backdate(incident: Incident, published_at: datetime) -> None:
    """The demo loads today a review that happened before publication: its log reads as it
    would have, a day of review ending at the publication time."""
    report = IncidentReport.objects.get(incident=incident)
    start = published_at - timedelta(days=1)
    ReviewRequest.objects.filter(report=report).update(created_at=start)
    events = list(ReviewEvent.objects.filter(report=report).order_by("created_at", "pk"))
    step = timedelta(days=1) / max(len(events) - 1, 1)
    for n, event in enumerate(events):
        ReviewEvent.objects.filter(pk=event.pk).update(created_at=start + n * step)
    IncidentReport.objects.filter(pk=report.pk).update(approved_at=published_at - step)
