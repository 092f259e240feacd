"""Double-submit guards of the staff writes: the same declare or update sent twice within
minutes is a double submit, not news. The database holds the lock, so two simultaneous
submits queue and the second is refused (docs/adr/0009-one-write-path.md).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone

from incidents.models import DeclareGuard, Incident

DUPLICATE_WINDOW = timedelta(minutes=10)


def title_key(title: str) -> str:
    """The guard key of a title: case and runs of spaces do not make another incident."""
    normal = " ".join(title.split()).casefold()
    return hashlib.sha256(normal.encode()).hexdigest()


def check_not_declared_twice(*, title: str) -> DeclareGuard:
    """Lock the title's guard row and refuse if the title was declared within the window.

    Call it inside the declaring transaction. The row lock (or, for a first declare, the
    unique key of the row being inserted) holds a concurrent declare of the same title
    until this transaction ends; it then reads the incident this one recorded.
    """
    guard, _ = DeclareGuard.objects.select_for_update().get_or_create(key=title_key(title))
    recent = guard.incident
    if (
        recent is not None
        and guard.declared_at is not None
        and guard.declared_at >= timezone.now() - DUPLICATE_WINDOW
    ):
        raise ValidationError(
            "An incident with this title was declared a moment ago; it was not declared twice. "
            f"Open it from the Now page ({recent.public_id})."
        )
    return guard


def record_declared(*, guard: DeclareGuard, incident: Incident) -> None:
    guard.incident = incident
    guard.declared_at = incident.created_at
    guard.save(update_fields=["incident", "declared_at"])


def check_update_not_repeated(*, incident: Incident, status: str, body: str) -> None:
    """Refuse the very update just posted. `incident` must be row-locked by the caller, so a
    second submit waits for the first to commit and then sees its update."""
    latest = incident.updates.order_by("-created_at", "-id").first()
    if (
        latest is not None
        and latest.status == status
        and latest.body == body
        and latest.created_at >= timezone.now() - DUPLICATE_WINDOW
    ):
        raise ValidationError("This update was just posted; it was not posted a second time.")
