"""Writes of the postmortem timeline: staff timeline entries and incident links.

Each write checks the `report.write` role (core.roles) before it writes, validates every
field (a refusal is a ValidationError naming the field, and changes nothing), renders the
Markdown once, and marks the public state changed when a public record moves.
Design: docs/adr/0020-timeline.md.
Also the writes besides review (postmortems.review): contributing factors, reflections
and report templates (docs/adr/0021-report-review.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from core import roles
from core.text import CLOCK_SKEW, check_time, clean_text
from edge import version as public_cache
from incidents import services as incident_services
from incidents.markdown import render_for_storage
from incidents.models import Incident, IncidentReport
from incidents.selectors import incident_shown_publicly
from postmortems.models import (
    ContributingFactor,
    IncidentLink,
    LinkKind,
    Phase,
    Reflection,
    ReportTemplate,
    TimelineEntry,
    Visibility,
)

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
    if incident_shown_publicly(incident):
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


@dataclass(frozen=True)
class FactorRow:
    kind: str
    description: str
    is_public: bool = False


@transaction.atomic
def report_insights_save(
    *,
    incident: Incident,
    factors: Sequence[FactorRow],
    reflections: dict[str, tuple[str, bool]],
    actor: User | None = None,
) -> None:
    """The report's contributing factors (replaced by `factors`, in their order) and its
    reflections (section -> (Markdown, public?)), all saved or none."""
    roles.check(actor, "report.write")
    report = _report(incident)
    errors: list[str] = []
    for index, row in enumerate(factors, start=1):
        if row.kind not in ContributingFactor.Kind.values:
            errors.append(f"Contributing factor {index}: choose its kind.")
        if not row.description.strip():
            errors.append(f"Contributing factor {index}: describe the factor.")
    unknown = set(reflections) - set(Reflection.Section.values)
    if unknown:
        errors.append(f"Unknown reflections: {', '.join(sorted(unknown))}.")
    rendered = {}
    for section, (body, is_public) in reflections.items():
        try:
            rendered[section] = (*incident_services.markdown_field(body, field=section), is_public)
        except ValidationError as exc:
            errors.extend(exc.messages)
    if errors:
        raise ValidationError(errors)
    ContributingFactor.objects.filter(report=report).delete()
    ContributingFactor.objects.bulk_create(
        ContributingFactor(
            report=report,
            kind=row.kind,
            description=row.description.strip(),
            is_public=row.is_public,
            position=i,
        )
        for i, row in enumerate(factors)
    )
    for section, (source, html, is_public) in rendered.items():
        Reflection.objects.update_or_create(
            report=report,
            section=section,
            defaults={"body": source, "body_html": html, "is_public": is_public},
        )


@transaction.atomic
def report_started(*, incident: Incident, template: ReportTemplate, actor: User | None = None) -> None:
    """A report begun from `template`: its reflections start from the template's text."""
    roles.check(actor, "report.write")
    report = _report(incident)
    for section in ReportTemplate.REFLECTIONS:
        text = getattr(template, section)
        if text.strip() and not Reflection.objects.filter(report=report, section=section).exists():
            source, html = incident_services.markdown_field(text, field=section)
            Reflection.objects.create(report=report, section=section, body=source, body_html=html)


def _report(incident: Incident) -> IncidentReport:
    try:
        return IncidentReport.objects.get(incident=incident)
    except IncidentReport.DoesNotExist:
        raise ValidationError("Write the incident report first.") from None


TEMPLATE_TEXT_FIELDS = (*ReportTemplate.SECTIONS, *ReportTemplate.REFLECTIONS)


@transaction.atomic
def report_template_save(
    *,
    template: ReportTemplate | None,
    name: str,
    description: str = "",
    is_default: bool = False,
    actor: User | None = None,
    **texts: str,
) -> ReportTemplate:
    """Create or edit a report template; making one the default unmarks the other."""
    roles.check(actor, "template.write")
    unknown = set(texts) - set(TEMPLATE_TEXT_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown template fields: {', '.join(sorted(unknown))}.")
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Name the template."})
    clash = ReportTemplate.objects.filter(name=name)
    if template is not None:
        clash = clash.exclude(pk=template.pk)
    if clash.exists():
        raise ValidationError({"name": "Another template has this name."})
    template = template or ReportTemplate()
    if template.is_default and not is_default:
        raise ValidationError({"is_default": "Make another template the default instead."})
    if is_default:
        ReportTemplate.objects.select_for_update().filter(is_default=True).exclude(pk=template.pk).update(
            is_default=False
        )
    template.name = name
    template.description = description.strip()
    template.is_default = is_default or not ReportTemplate.objects.exclude(pk=template.pk).exists()
    for field in TEMPLATE_TEXT_FIELDS:
        setattr(template, field, incident_services.markdown_field(texts.get(field, ""), field=field)[0])
    template.save()
    return template
