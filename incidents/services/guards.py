"""Double-submit guards of the staff writes: the same declare or update sent twice within
minutes is a double submit, not news. The database holds the lock, so two simultaneous
submits queue and the second is refused (docs/adr/0009-one-write-path.md).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone

from core.timezones import format_local
from incidents.models import DeclareGuard, Incident

DUPLICATE_WINDOW = timedelta(minutes=10)


def title_key(title: str) -> str:
    """The guard key of a title: case and runs of spaces do not make another incident."""
    normal = " ".join(title.split()).casefold()
    return hashlib.sha256(normal.encode()).hexdigest()


class DuplicateTitle(ValidationError):
    """An incident with the same title was declared within the guard window. A person
    may still mean a new one: declaring again with `confirm_duplicate_of` set to
    `existing.public_id` files it."""

    def __init__(self, existing: Incident) -> None:
        super().__init__(
            {
                "title": f"An incident with this title was declared at {format_local(existing.created_at)} "
                f"({existing.public_id}); it was not declared twice."
            }
        )
        self.existing = existing


def check_not_declared_twice(*, title: str, confirm_duplicate_of: str | None = None) -> DeclareGuard:
    """Lock the title's guard row and warn if the title was declared within the window,
    unless the person confirmed they mean a new incident besides that very one.

    Call it inside the declaring transaction. The row lock (or, for a first declare, the
    unique key of the row being inserted) holds a concurrent declare of the same title
    until this transaction ends; it then reads the incident this one recorded. So a
    double click on "declare anyway" files one incident: the second click confirms the
    older incident, but the guard now names the one the first click filed.
    """
    guard, _ = DeclareGuard.objects.select_for_update().get_or_create(key=title_key(title))
    recent = guard.incident
    if (
        recent is not None
        and guard.declared_at is not None
        and guard.declared_at >= timezone.now() - DUPLICATE_WINDOW
        and confirm_duplicate_of != recent.public_id
    ):
        raise DuplicateTitle(recent)
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
