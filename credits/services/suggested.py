"""Making the draft reconciliation suggests (credits.suggested_drafts) through the
incidents services: a draft incident, or a window on a draft incident. Nothing is
published; staff publish or delete the draft as with any other."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from credits import reconcile, suggested_drafts
from incidents import services as incidents
from incidents.models import Incident, Location, Product


@transaction.atomic
def suggested_draft_create(
    *,
    actor: User | None,
    incident: Incident,
    product_id: int,
    location_id: int | None,
    start: datetime,
    end: datetime,
    now: datetime | None = None,
) -> Incident:
    """The draft for one suggestion of the incident's reconciliation, read again now: a
    suggestion that no longer stands (windows edited, measurement changed) is refused
    and nothing is written. Idempotent: a second click returns the draft already made.
    Returns the draft incident holding the window."""
    rows = reconcile.incident_reconciliation(incident, now=now or timezone.now())
    found = suggested_drafts.find(
        incident, rows, product_id=product_id, location_id=location_id, start=start, end=end
    )
    if found is None:
        raise ValidationError(
            "This suggestion no longer stands: the windows or the measurement changed. Reload the page."
        )
    if found.made:
        return Incident.objects.get(public_id=found.made)
    product = Product.objects.get(pk=product_id)
    location = Location.objects.get(pk=location_id) if location_id is not None else None
    if found.kind == suggested_drafts.KIND_WINDOW:
        incidents.impact_window_add(
            incident=incident,
            product=product,
            location=location,
            level=suggested_drafts.LEVEL,
            started_at=start,
            ended_at=end,
            description="Measured by the SLI source, not declared (reconciliation).",
            actor=actor,
        )
        return incident
    draft = incidents.incident_open(
        title=found.title,
        started_at=start,
        body=f"{found.title}: measured from {start.astimezone(UTC):%Y-%m-%d %H:%M} to "
        f"{end.astimezone(UTC):%Y-%m-%d %H:%M} UTC.",
        windows=[
            incidents.WindowSpec(
                product=product,
                location=location,
                level=suggested_drafts.LEVEL,
                started_at=start,
                ended_at=end,
            )
        ],
        is_public=False,
        created_by=actor,
        notify=False,
        internal_notes=(
            f"Suggested by the reconciliation of incident {incident.public_id} (“{incident.title}”): "
            "the SLI source measured impact here that no window declared. Nothing is published until "
            "someone publishes this draft; delete it if the measurement was wrong."
        ),
    )
    # The measured impact is over: the draft is resolved at its end, so publishing it
    # later files it into the history without announcing an "opened" that is long past.
    incidents.incident_resolve(
        incident=draft, resolved_at=end, body="The measured impact ended.", author=actor, notify=False
    )
    return draft
