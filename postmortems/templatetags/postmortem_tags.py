"""Template tags the public pages use to show a published report's timeline and key
durations, and an incident's links to its recurrences and related incidents. Public rows
only: these tags never show an internal entry, an alert or a staff-only product."""

from __future__ import annotations

from typing import Any

from django import template

from incidents.models import Incident, IncidentReport
from postmortems.selectors import incident_links, incident_timeline

register = template.Library()


@register.inclusion_tag("postmortems/_public_timeline.html")
def report_timeline(report: IncidentReport) -> dict[str, Any]:
    return {"timeline": incident_timeline(incident=report.incident, public=True)}


@register.inclusion_tag("postmortems/_links.html")
def linked_incidents(incident: Incident) -> dict[str, Any]:
    return {"links": incident_links(incident=incident, public=True)}
