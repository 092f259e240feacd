"""The Google-style feed: `/incidents.json` and `/products.json`.

Tools written for the Google Cloud / Workspace status dashboards read these shapes:
each incident has `begin`/`end`, `external_desc`, its `updates` (newest first) and
`most_recent_update`, a `status_impact` (SERVICE_OUTAGE, SERVICE_DISRUPTION,
SERVICE_INFORMATION), a `severity` (high, medium, low), the `affected_products`, the
locations affected now and before, and a relative `uri`. `end` is absent while the
incident is ongoing, as in the original feed. Only public data appears.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Prefetch
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.statuspage_v2 import PUBLIC_ERRORS, PublicFeedView, iso
from incidents import selectors
from incidents.models import ImpactWindow, Incident, IncidentUpdate, Location

STATUS_IMPACTS = ["SERVICE_OUTAGE", "SERVICE_DISRUPTION", "SERVICE_INFORMATION"]
UPDATE_STATUSES = ["AVAILABLE", *STATUS_IMPACTS]
SEVERITIES = ["high", "medium", "low"]
GLOBAL = {"title": "Global", "id": "global"}

_LEVEL_IMPACT: dict[str, tuple[str, str]] = {
    ImpactWindow.Level.MAJOR_OUTAGE: ("SERVICE_OUTAGE", "high"),
    ImpactWindow.Level.PARTIAL_OUTAGE: ("SERVICE_DISRUPTION", "medium"),
    ImpactWindow.Level.DEGRADED_PERFORMANCE: ("SERVICE_DISRUPTION", "medium"),
    ImpactWindow.Level.UNDER_MAINTENANCE: ("SERVICE_INFORMATION", "low"),
}
_INCIDENT_IMPACT: dict[str, tuple[str, str]] = {
    Incident.Impact.CRITICAL: ("SERVICE_OUTAGE", "high"),
    Incident.Impact.MAJOR: ("SERVICE_OUTAGE", "high"),
    Incident.Impact.MINOR: ("SERVICE_DISRUPTION", "medium"),
    Incident.Impact.NONE: ("SERVICE_INFORMATION", "low"),
}
_CLOSED = (Incident.Status.RESOLVED, Incident.Status.POSTMORTEM, Incident.Status.COMPLETED)
# The newest incidents only: the whole history would make every rebuild read and send it
# all (docs/adr/0019-bounded-public-reads.md). Older ones stay in the monthly history.
GOOGLE_FEED_LIMIT = 500


def _location(location: Location | None) -> dict[str, str]:
    if location is None:
        return dict(GLOBAL)
    return {"title": location.label, "id": location.name}


def _unique(items: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[str] = set()
    result = []
    for item in items:
        if item["id"] not in seen:
            seen.add(item["id"])
            result.append(item)
    return result


def _impact(incident: Incident, windows: list[ImpactWindow]) -> tuple[str, str]:
    """From the worst window when there are any (what customers saw), else the impact."""
    if windows:
        return _LEVEL_IMPACT[selectors.worst_level(w.level for w in windows)]
    return _INCIDENT_IMPACT[incident.impact]


def _update(update: IncidentUpdate, windows: list[ImpactWindow], status_impact: str) -> dict[str, Any]:
    started = [w for w in windows if w.started_at <= update.display_at] or windows
    return {
        "created": iso(update.created_at),
        "modified": iso(update.created_at),
        "when": iso(update.display_at),
        "text": update.body,
        "status": "AVAILABLE" if update.status in _CLOSED else status_impact,
        "affected_locations": _unique([_location(w.location) for w in started]),
    }


def serialize_incident(incident: Incident, *, now: datetime) -> dict[str, Any]:
    windows = list(incident.windows.all())
    updates = list(incident.updates.all())
    status_impact, severity = _impact(incident, windows)
    current = _unique([_location(w.location) for w in windows if w.ended_at is None or w.ended_at > now])
    current_ids = {item["id"] for item in current}
    previous = _unique(
        [
            _location(w.location)
            for w in windows
            if w.ended_at is not None and w.ended_at <= now and _location(w.location)["id"] not in current_ids
        ]
    )
    products = _unique([{"title": w.product.name, "id": w.product.public_id} for w in windows])
    rendered_updates = [_update(u, windows, status_impact) for u in updates]
    data: dict[str, Any] = {
        "id": incident.public_id,
        "begin": iso(incident.started_at),
        "created": iso(incident.created_at),
        "modified": iso(incident.updated_at),
        "external_desc": incident.title,
        "updates": rendered_updates,
        "most_recent_update": rendered_updates[0] if rendered_updates else None,
        "status_impact": status_impact,
        "severity": severity,
        "service_key": products[0]["id"] if products else "",
        "service_name": products[0]["title"] if products else "",
        "affected_products": products,
        "uri": f"incidents/{incident.public_id}",
        "currently_affected_locations": current,
        "previously_affected_locations": previous,
    }
    if incident.resolved_at is not None:
        data["end"] = iso(incident.resolved_at)
    return data


def build_incidents() -> list[dict[str, Any]]:
    now = timezone.now()
    incidents = (
        selectors.incidents_public()
        .filter(kind=Incident.Kind.INCIDENT)
        .prefetch_related(
            selectors.public_windows_prefetch(),
            Prefetch("updates", queryset=IncidentUpdate.objects.order_by("-display_at", "-id")),
        )
        .order_by("-started_at", "-id")[:GOOGLE_FEED_LIMIT]
    )
    return [serialize_incident(incident, now=now) for incident in incidents]


def build_products() -> dict[str, Any]:
    return {"products": [{"title": p.name, "id": p.public_id} for p in selectors.products_public()]}


# --- Schema -----------------------------------------------------------------------------------------


class GoogleLocationSerializer(serializers.Serializer):
    title = serializers.CharField()
    id = serializers.CharField()


class GoogleProductSerializer(serializers.Serializer):
    title = serializers.CharField()
    id = serializers.CharField()


class GoogleUpdateSerializer(serializers.Serializer):
    created = serializers.DateTimeField()
    modified = serializers.DateTimeField()
    when = serializers.DateTimeField()
    text = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=UPDATE_STATUSES)
    affected_locations = GoogleLocationSerializer(many=True)


class GoogleIncidentSerializer(serializers.Serializer):
    id = serializers.CharField()
    begin = serializers.DateTimeField()
    end = serializers.DateTimeField(required=False, help_text="Absent while the incident is ongoing.")
    created = serializers.DateTimeField()
    modified = serializers.DateTimeField()
    external_desc = serializers.CharField()
    updates = GoogleUpdateSerializer(many=True)
    most_recent_update = GoogleUpdateSerializer(allow_null=True)
    status_impact = serializers.ChoiceField(choices=STATUS_IMPACTS)
    severity = serializers.ChoiceField(choices=SEVERITIES)
    service_key = serializers.CharField(allow_blank=True)
    service_name = serializers.CharField(allow_blank=True)
    affected_products = GoogleProductSerializer(many=True)
    uri = serializers.CharField()
    currently_affected_locations = GoogleLocationSerializer(many=True)
    previously_affected_locations = GoogleLocationSerializer(many=True)


class GoogleProductsResponse(serializers.Serializer):
    products = GoogleProductSerializer(many=True)


class GoogleIncidentsView(PublicFeedView):
    def build(self) -> Any:
        return build_incidents()

    @extend_schema(
        summary="Incidents (Google dashboard format)",
        responses={200: GoogleIncidentSerializer(many=True), **PUBLIC_ERRORS},
        description=f"The newest {GOOGLE_FEED_LIMIT} public incidents, newest first, in the Google status "
        "dashboard format.",
        tags=["google-feed"],
        operation_id="google_incidents",
        auth=[],
    )
    def get(self, request: Any) -> Any:
        return super().get(request)


class GoogleProductsView(PublicFeedView):
    def build(self) -> Any:
        return build_products()

    @extend_schema(
        summary="Products (Google dashboard format)",
        responses={200: GoogleProductsResponse, **PUBLIC_ERRORS},
        description="Public products in the Google status dashboard format.",
        tags=["google-feed"],
        operation_id="google_products",
        auth=[],
    )
    def get(self, request: Any) -> Any:
        return super().get(request)
