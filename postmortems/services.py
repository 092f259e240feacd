"""Writes of the postmortem timeline: staff timeline entries and incident links.

Each write checks the `report.write` role (core.roles) before it writes, validates every
field (a refusal is a ValidationError naming the field, and changes nothing), renders the
Markdown once, and marks the public state changed when a public record moves.
Design: docs/adr/0020-timeline.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from core import roles
from core.text import CLOCK_SKEW, check_time, clean_text
from edge import version as public_cache
from incidents.markdown import render_for_storage
from incidents.models import Incident
from postmortems.models import IncidentLink, LinkKind, Phase, TimelineEntry, Visibility

TEXT_MAX_LENGTH = 5000


def _clean_entry(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - set(TimelineEntry.FIELDS)
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    cleaned = dict(fields)
    if "at" in fields:
        at = fields["at"]
        if not isinstance(at, datetime):
            raise ValidationError({"at": "Enter a date and time."})
        check_time(at, field="at", future=CLOCK_SKEW)
    if "text" in fields:
        text = clean_text(fields["text"], field="text", max_length=TEXT_MAX_LENGTH)
        if not text.strip():
            raise ValidationError({"text": "This field is required."})
        cleaned["text"] = text
        cleaned["text_html"] = render_for_storage(text, field="text")
    if "phase" in fields and fields["phase"] not in Phase.values:
        raise ValidationError({"phase": f"Choose one of: {', '.join(Phase.values)}."})
    if "visibility" in fields and fields["visibility"] not in Visibility.values:
        raise ValidationError({"visibility": f"Choose one of: {', '.join(Visibility.values)}."})
    return cleaned


def _public_changed(incident: Incident) -> None:
    if incident.is_public:
        transaction.on_commit(public_cache.public_state_changed)


@transaction.atomic
def timeline_entry_create(
    *,
    incident: Incident,
    at: datetime,
    text: str,
    phase: str = Phase.OTHER,
    visibility: str = Visibility.INTERNAL,
    actor: User | None = None,
) -> TimelineEntry:
    roles.check(actor, "report.write")
    cleaned = _clean_entry({"at": at, "text": text, "phase": phase, "visibility": visibility})
    entry = TimelineEntry(incident=incident, author=actor, **cleaned)
    entry.full_clean()
    entry.save()
    if entry.is_public:
        _public_changed(incident)
    return entry


@transaction.atomic
def timeline_entry_edit(
    *, entry: TimelineEntry, changes: dict[str, Any], actor: User | None = None
) -> TimelineEntry:
    roles.check(actor, "report.write")
    cleaned = _clean_entry(changes)
    entry = TimelineEntry.objects.select_for_update().select_related("incident").get(pk=entry.pk)
    was_public = entry.is_public
    for name, value in cleaned.items():
        setattr(entry, name, value)
    entry.full_clean()
    if cleaned:
        entry.save(update_fields=[*cleaned, "updated_at"])
        if was_public or entry.is_public:
            _public_changed(entry.incident)
    return entry


@transaction.atomic
def timeline_entry_delete(*, entry: TimelineEntry, actor: User | None = None) -> None:
    roles.check(actor, "report.write")
    incident = entry.incident
    was_public = entry.is_public
    entry.delete()
    if was_public:
        _public_changed(incident)


def incident_link_create(
    *, from_incident: Incident, to_incident: Incident, kind: str, actor: User | None = None
) -> IncidentLink:
    """Link two incidents; one link per pair, whichever way round it was made."""
    roles.check(actor, "report.write")
    if kind not in LinkKind.values:
        raise ValidationError({"kind": f"Choose one of: {', '.join(LinkKind.values)}."})
    if from_incident.pk == to_incident.pk:
        raise ValidationError({"to_incident": "An incident cannot be linked to itself."})
    if (
        IncidentLink.objects.filter(from_incident=from_incident, to_incident=to_incident).exists()
        or IncidentLink.objects.filter(from_incident=to_incident, to_incident=from_incident).exists()
    ):
        raise ValidationError({"to_incident": "These incidents are already linked."})
    link = IncidentLink(from_incident=from_incident, to_incident=to_incident, kind=kind, author=actor)
    try:
        with transaction.atomic():
            link.save()
    except IntegrityError as exc:  # a concurrent link of the same pair won the race
        raise ValidationError({"to_incident": "These incidents are already linked."}) from exc
    if from_incident.is_public and to_incident.is_public:
        _public_changed(from_incident)
    return link


@transaction.atomic
def incident_link_edit(*, link: IncidentLink, kind: str, actor: User | None = None) -> IncidentLink:
    roles.check(actor, "report.write")
    if kind not in LinkKind.values:
        raise ValidationError({"kind": f"Choose one of: {', '.join(LinkKind.values)}."})
    link.kind = kind
    link.save(update_fields=["kind"])
    _public_changed(link.from_incident)
    return link


@transaction.atomic
def incident_link_delete(*, link: IncidentLink, actor: User | None = None) -> None:
    roles.check(actor, "report.write")
    incident = link.from_incident
    link.delete()
    _public_changed(incident)
