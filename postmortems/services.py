"""Writes of the postmortems room besides review (postmortems.review): contributing
factors, reflections and report templates. Design: docs/adr/0021-report-review.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from core import roles
from incidents import services as incident_services
from incidents.models import Incident, IncidentReport
from postmortems.models import ContributingFactor, Reflection, ReportTemplate


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
