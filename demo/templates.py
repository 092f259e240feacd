"""Demo message templates: the words staff start an incident or an update from, one per
stage (investigating, identified, monitoring, resolved) and one for maintenance.

Written through `console.services.template_save`, as the console's template page does;
keyed on their names, and an existing template (edited or not) is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction

from console import services
from console.models import MessageTemplate
from incidents.models import IncidentStatus

Kind = MessageTemplate.Kind

# (name, kind, status, title, body)
TEMPLATES: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "Investigating",
        Kind.INCIDENT,
        IncidentStatus.INVESTIGATING,
        "Errors and slow responses",
        "We are looking into reports that some requests fail or take longer than usual. "
        "Our next update will follow within 30 minutes, sooner if we learn more.",
    ),
    (
        "Identified",
        Kind.UPDATE,
        IncidentStatus.IDENTIFIED,
        "",
        "We have found the cause and are working on a fix. Our next update will follow within an hour.",
    ),
    (
        "Monitoring",
        Kind.UPDATE,
        IncidentStatus.MONITORING,
        "",
        "A fix is in place and requests are succeeding again. We are watching closely to make sure "
        "it stays that way.",
    ),
    (
        "Resolved",
        Kind.UPDATE,
        IncidentStatus.RESOLVED,
        "",
        "The problem is fixed and everything is working normally. Thank you for your patience; "
        "a report on what happened and what we are changing will follow.",
    ),
    (
        "Maintenance under way",
        Kind.UPDATE,
        IncidentStatus.IN_PROGRESS,
        "",
        "The planned maintenance has started. Some requests may be slower than usual until it ends; "
        "we will post again when it is complete.",
    ),
)


class Writer(Protocol):
    def write(self, msg: str, /) -> Any: ...


@dataclass
class TemplatesDemoSummary:
    templates_created: int = 0


def load(*, stdout: Writer | None = None) -> TemplatesDemoSummary:
    summary = TemplatesDemoSummary()
    with transaction.atomic():
        existing = {name.casefold() for name in MessageTemplate.objects.values_list("name", flat=True)}
        for name, kind, status, title, body in TEMPLATES:
            if name.casefold() in existing:
                continue
            services.template_save(name=name, kind=kind, status=status, title=title, body=body)
            summary.templates_created += 1
    if stdout is not None:
        stdout.write(f"Message templates: {summary.templates_created} created\n")
    return summary
