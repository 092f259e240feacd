"""Reads of alert intake for the staff console: `alerts_for_incident(incident)` is what an
incident's staff page shows as the alerts behind it. Staff-only: never call it from a
public view.
"""

from __future__ import annotations

from django.db.models import QuerySet

from alerts.models import Alert
from incidents.models import Incident


def alerts_for_incident(incident: Incident) -> QuerySet[Alert]:
    """The alerts behind one incident (any visibility), earliest first."""
    return (
        Alert.objects.filter(group__incident=incident)
        .select_related("integration", "rule", "window__product", "window__location")
        .order_by("starts_at", "id")
    )
