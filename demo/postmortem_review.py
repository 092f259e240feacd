"""The demo's reports go through review before they are published, as every report must
(docs/adr/0021-report-review.md): the responder writes and asks, the approver comments,
approves and publishes, all through the services the console and the API call."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from incidents import services
from incidents.models import Incident
from postmortems import review

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
