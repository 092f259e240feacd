"""Corrections after the fact: editing a published update's text, and level changes that
post no public entry (docs/adr/0013-posted-and-shown-times.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from core.text import clean_text
from incidents.models import Incident, IncidentNote, IncidentUpdate, IncidentUpdateRevision
from incidents.services._common import markdown_field, public_changed
from incidents.services.incidents import check_shown_after_start
from incidents.services.windows import (
    LevelSpec,
    impact_for_levels,
    impact_levels_set,
    impact_raise,
    impact_worst,
)


@transaction.atomic
def incident_update_edit(*, update: IncidentUpdate, body: str, actor: User | None = None) -> IncidentUpdate:
    """Correct the text of a published update. The previous text is kept as a revision
    (staff see the history, the public an "edited" mark) and the public stamp moves;
    subscribers are not told
    again: a correction is not news."""
    roles.check(actor, "incident.update")
    # Row lock: two staff correcting one update keep both previous texts, in order.
    update = IncidentUpdate.objects.select_for_update().select_related("incident").get(pk=update.pk)
    body, body_html = markdown_field(body, field="body")
    if not body.strip():
        raise ValidationError({"body": "An update cannot be emptied; say what changed."})
    if body == update.body:
        raise ValidationError({"body": "The text is unchanged."})
    now = timezone.now()
    IncidentUpdateRevision.objects.create(
        update=update, body=update.body, body_html=update.body_html, edited_by=actor, edited_at=now
    )
    update.body = body
    update.body_html = body_html
    update.edited_at = now
    update.save(update_fields=["body", "body_html", "edited_at"])
    public_changed(update.incident)
    return update


@transaction.atomic
def incident_levels_change(
    *,
    incident: Incident,
    levels: Sequence[LevelSpec],
    at: datetime | None = None,
    impact: str | None = None,
    note: str = "",
    actor: User | None = None,
) -> int:
    """Move the impact windows as an update does, without a public entry and without
    telling anyone; returns how many (product, location) levels changed. The levels are
    public (the page shows them), so the public stamp moves; `note`, if any, is a
    staff-only note. The recorded impact only rises, as with an update."""
    roles.check(actor, "incident.update")
    note = clean_text(note, field="note").strip()
    if impact is not None and impact not in Incident.Impact.values:
        raise ValidationError({"impact": f"Unknown impact {impact!r}."})
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    if incident.is_closed:
        raise ValidationError("This incident is closed; reopen it with an update to change its levels.")
    check_shown_after_start(incident, at, field="at")
    at = at or timezone.now()
    changed = impact_levels_set(incident=incident, levels=levels, at=at, field="at") if levels else 0
    if not changed and not note:
        raise ValidationError({"levels": "No level changed; choose a new level or write a note."})
    implied = impact_for_levels(spec.level for spec in levels)
    impact_raise(incident=incident, impact=impact_worst([implied, impact or implied]))
    if note:
        IncidentNote.objects.create(incident=incident, body=note, at=at, author=actor)
    return changed
