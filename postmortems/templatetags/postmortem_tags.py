"""Template tags the public pages use to show a published report's timeline and key
durations, and an incident's links to its recurrences and related incidents. Public rows
only: these tags never show an internal entry, an alert or a staff-only product."""

from __future__ import annotations

from typing import Any

from django import template

from incidents.models import Incident, IncidentReport
from postmortems.selectors import Loaded, incident_links, incident_timeline

register = template.Library()


@register.inclusion_tag("postmortems/_public_timeline.html", takes_context=True)
def report_timeline(context: template.Context, report: IncidentReport) -> dict[str, Any]:
    """On the public incident page, the timeline reuses the page's windows, updates and
    report (one more read: the staff entries); elsewhere (the console's preview) it reads them."""
    page: Any = context.get("page")
    incident = getattr(page, "incident", None)
    if incident is not None and incident.pk == report.incident_id:
        loaded = Loaded(
            windows=[row.window for row in page.windows], updates=page.updates, report=page.report
        )
        return {"timeline": incident_timeline(incident=incident, public=True, loaded=loaded)}
    return {"timeline": incident_timeline(incident=report.incident, public=True)}


@register.inclusion_tag("postmortems/_links.html")
def linked_incidents(incident: Incident) -> dict[str, Any]:
    return {"links": incident_links(incident=incident, public=True)}
