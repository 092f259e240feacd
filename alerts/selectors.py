"""Reads of alert intake, for the staff console and the admin.

`alert_drafts()` lists what the console's home shows under "alert-fed drafts";
`alerts_for_incident(incident)` is what an incident's staff page shows as the alerts
behind it. Both are staff-only: never call them from a public view.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from alerts.models import Alert, AlertGroup
from incidents.models import Incident


def _alerts_prefetch() -> Prefetch[Any]:
    return Prefetch(
        "alert_group__alerts",
        queryset=Alert.objects.select_related("window__product", "window__location", "rule").order_by(
            "starts_at", "id"
        ),
    )


def alert_drafts() -> QuerySet[Incident]:
    """Draft incidents (not yet public) opened from alerts, newest first, with their
    alert group (`incident.alert_group`: integration, needs_attention, publish_due_at) and
    its alerts (`incident.alert_group.alerts.all()`) loaded in a constant number of queries."""
    return (
        Incident.objects.filter(is_public=False, alert_group__isnull=False)
        .select_related("alert_group__integration")
        .prefetch_related(_alerts_prefetch(), "windows__product", "windows__location")
        .order_by("-started_at", "-id")
    )


def alerts_needing_attention() -> QuerySet[AlertGroup]:
    """Groups whose alerts all resolved on an incident a person has been updating."""
    return (
        AlertGroup.objects.exclude(needs_attention="")
        .filter(incident__resolved_at__isnull=True)
        .select_related("incident", "integration")
    )


def alerts_for_incident(incident: Incident) -> QuerySet[Alert]:
    """The alerts behind one incident (any visibility), earliest first."""
    return (
        Alert.objects.filter(group__incident=incident)
        .select_related("integration", "rule", "window__product", "window__location")
        .order_by("starts_at", "id")
    )
