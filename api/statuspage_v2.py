"""Statuspage-compatible public endpoints (`/api/v2/*.json`): that format's field names,
enum strings and nesting, so its existing clients work with only the base URL changed.

Only public data appears, read through the same selectors as the HTML page; bodies come
from the page cache (docs/adr/0003-page-cache.md). Endpoints: docs/api.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Prefetch, QuerySet, Subquery
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import PRODUCT_STATUSES, ErrorSerializer, incident_url
from api.throttling import AnonymousThrottle
from core.site import page_id
from edge.http import finalize_public_response
from incidents import selectors
from incidents.level_changes import LevelChange, update_level_changes
from incidents.models import (
    INCIDENT_STATUSES,
    MAINTENANCE_STATUSES,
    ImpactWindow,
    Incident,
    IncidentUpdate,
    Product,
)

COMPONENT_STATUSES = PRODUCT_STATUSES
INDICATORS = ["none", "minor", "major", "critical", "maintenance"]
INCIDENT_STATUS_VALUES = [s.value for s in INCIDENT_STATUSES]
MAINTENANCE_STATUS_VALUES = [s.value for s in MAINTENANCE_STATUSES]
IMPACTS = ["none", "minor", "major", "critical", "maintenance"]
RECENT_LIMIT = 50
ACTIVE_MAINTENANCE = list(selectors.ACTIVE_MAINTENANCE_STATUSES)
# Before anything was ever published; keeps `updated_at` (and so the ETag) stable.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso(value: datetime | None) -> str | None:
    """ISO 8601 with milliseconds and an explicit offset, as Statuspage writes it."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


def group_component_id(group_id: int) -> str:
    return f"group{group_id:07d}"


# --- Builders -----------------------------------------------------------------------------------


@dataclass
class Components:
    now: datetime
    products: Sequence[Product]
    items: list[dict[str, Any]] = field(default_factory=list)
    by_product: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[int, str] = field(default_factory=dict)
    updated_at: datetime = EPOCH


def _product_updated_at(product: Product) -> datetime:
    # A component changes when the product is edited or when a window on it opens,
    # starts or ends: the latest of those that has happened.
    stamps = [
        product.updated_at,
        getattr(product, "last_window_created", None),
        getattr(product, "last_window_started", None),
        getattr(product, "last_window_ended", None),
    ]
    return max(stamp for stamp in stamps if stamp is not None)


def _last_window(field: str, *, until: datetime | None = None) -> Subquery:
    """The product's latest `field` among its counted windows (a draft's writes must not
    move a public `updated_at`), up to `until`: one backward step on the (product, field)
    index per product, where a MAX over the join read every window of the history."""
    counted = Incident.objects.filter(pk=OuterRef("incident_id")).values("is_public")[:1]
    windows = ImpactWindow.objects.filter(product=OuterRef("pk"), **{f"{field}__isnull": False})
    if until is not None:
        windows = windows.filter(**{f"{field}__lte": until})
    windows = windows.alias(counted=Subquery(counted)).filter(counted=True)
    return Subquery(windows.order_by(f"-{field}").values(field)[:1])


def build_components(*, now: datetime) -> Components:
    products = list(
        selectors.products_public().annotate(
            last_window_created=_last_window("created_at"),
            last_window_started=_last_window("started_at", until=now),
            last_window_ended=_last_window("ended_at", until=now),
        )
    )
    # Databases disagree on where NULL groups sort; positions must not depend on that.
    products.sort(
        key=lambda p: (
            p.group is None,
            p.group.position if p.group else 0,
            p.group.name if p.group else "",
            p.position,
            p.name,
        )
    )
    raw = selectors.product_statuses(at=now, products=products)
    result = Components(
        now=now, products=products, statuses={p.pk: raw.get(p.pk, selectors.OPERATIONAL) for p in products}
    )
    pid = page_id()
    groups: dict[int, dict[str, Any]] = {}
    position = 0
    for product in products:
        updated_at = _product_updated_at(product)
        group = None
        if product.group is not None:
            group = groups.get(product.group.pk)
            if group is None:
                position += 1
                group = {
                    "id": group_component_id(product.group.pk),
                    "name": product.group.name,
                    "status": selectors.OPERATIONAL,
                    "created_at": iso(product.group.created_at),
                    "updated_at": iso(product.group.created_at),
                    "position": position,
                    "description": None,
                    "showcase": False,
                    "start_date": None,
                    "group_id": None,
                    "page_id": pid,
                    "group": True,
                    "only_show_if_degraded": False,
                    "components": [],
                }
                groups[product.group.pk] = group
                result.items.append(group)
        position += 1
        component = {
            "id": product.public_id,
            "name": product.name,
            "status": result.statuses[product.pk],
            "created_at": iso(product.created_at),
            "updated_at": iso(updated_at),
            "position": position,
            "description": product.description or None,
            "showcase": True,
            "start_date": product.created_at.astimezone(UTC).date().isoformat(),
            "group_id": group["id"] if group else None,
            "page_id": pid,
            "group": False,
            "only_show_if_degraded": False,
        }
        result.items.append(component)
        result.by_product[product.pk] = component
        result.updated_at = max(result.updated_at, updated_at)
        if group is not None:
            group["components"].append(product.public_id)
            group["status"] = selectors.worst_level([str(group["status"]), str(component["status"])])
            group["updated_at"] = max(group["updated_at"], component["updated_at"])
    return result


def _incidents(kind: str) -> QuerySet[Incident]:
    return (
        selectors.incidents_public()
        .filter(kind=kind)
        .prefetch_related(
            selectors.public_windows_prefetch(),
            Prefetch("updates", queryset=IncidentUpdate.objects.order_by("-display_at", "-id")),
        )
    )


def _update(update: IncidentUpdate, incident: Incident, affected: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": str(update.pk),
        "status": update.status,
        "body": update.body,
        "incident_id": incident.public_id,
        "created_at": iso(update.created_at),
        "updated_at": iso(update.created_at),
        "display_at": iso(update.display_at),
        "affected_components": affected or None,
        "deliver_notifications": update.notify_subscribers,
        "custom_tweet": None,
        "tweet_id": None,
    }


def _affected(changes: list[LevelChange], components: Components) -> list[dict[str, Any]]:
    """Statuspage's `affected_components`: the public components whose level it changed."""
    affected = []
    for change in changes:
        component = components.by_product.get(change.product_id)
        if component is not None:
            affected.append(
                {
                    "code": component["id"],
                    "name": component["name"],
                    "old_status": change.old,
                    "new_status": change.new,
                }
            )
    return affected


def serialize_incident(incident: Incident, components: Components) -> dict[str, Any]:
    updates = list(incident.updates.all())
    changes = update_level_changes(updates=updates, windows=list(incident.windows.all()))
    monitoring = [u.display_at for u in updates if u.status == Incident.Status.MONITORING]
    affected: list[dict[str, Any]] = []
    seen: set[int] = set()
    for window in incident.windows.all():
        component = components.by_product.get(window.product_id)
        if component is not None and window.product_id not in seen:
            seen.add(window.product_id)
            affected.append(dict(component))
    data = {
        "id": incident.public_id,
        "name": incident.title,
        "status": incident.status,
        "created_at": iso(incident.created_at),
        "updated_at": iso(incident.updated_at),
        "monitoring_at": iso(min(monitoring)) if monitoring else None,
        "resolved_at": iso(incident.resolved_at),
        "impact": incident.impact,
        "shortlink": incident_url(incident.public_id),
        "started_at": iso(incident.started_at),
        "page_id": page_id(),
        "incident_updates": [
            _update(u, incident, _affected(changes.get(u.pk, []), components)) for u in updates
        ],
        "components": affected,
    }
    if incident.is_maintenance:
        data["scheduled_for"] = iso(incident.scheduled_for)
        data["scheduled_until"] = iso(incident.scheduled_until)
    return data


def _serialize_all(incidents: Iterable[Incident], components: Components) -> list[dict[str, Any]]:
    return [serialize_incident(incident, components) for incident in incidents]


def build_page(components: Components) -> dict[str, Any]:
    # The newest first on the (is_public, updated_at) index: a MAX would read them all.
    latest = selectors.incidents_public().order_by("-updated_at").values_list("updated_at", flat=True).first()
    updated_at = max(stamp for stamp in (components.updated_at, latest, EPOCH) if stamp is not None)
    return {
        "id": page_id(),
        "name": settings.SITE_NAME,
        "url": settings.SITE_URL,
        "time_zone": settings.DISPLAY_TIME_ZONE,
        "updated_at": iso(updated_at),
    }


def build_status(components: Components) -> dict[str, str]:
    summary = selectors.status_summary(
        now=components.now, products=components.products, statuses=components.statuses
    )
    return {"indicator": summary.banner.indicator, "description": summary.banner.description}


def unresolved_incidents(components: Components) -> list[dict[str, Any]]:
    queryset = _incidents(Incident.Kind.INCIDENT).filter(status__in=selectors.UNRESOLVED_STATUSES)
    return _serialize_all(queryset.order_by("-started_at", "-id"), components)


def recent_incidents(components: Components) -> list[dict[str, Any]]:
    queryset = _incidents(Incident.Kind.INCIDENT).order_by("-started_at", "-id")[:RECENT_LIMIT]
    return _serialize_all(queryset, components)


def upcoming_maintenances(components: Components) -> list[dict[str, Any]]:
    queryset = _incidents(Incident.Kind.MAINTENANCE).filter(status=Incident.Status.SCHEDULED)
    return _serialize_all(queryset.order_by("scheduled_for", "id"), components)


def active_maintenances(components: Components) -> list[dict[str, Any]]:
    queryset = _incidents(Incident.Kind.MAINTENANCE).filter(status__in=ACTIVE_MAINTENANCE)
    return _serialize_all(queryset.order_by("scheduled_for", "id"), components)


def recent_maintenances(components: Components) -> list[dict[str, Any]]:
    queryset = _incidents(Incident.Kind.MAINTENANCE).order_by("-scheduled_for", "-id")[:RECENT_LIMIT]
    return _serialize_all(queryset, components)


def build_summary(components: Components) -> dict[str, Any]:
    queryset = _incidents(Incident.Kind.MAINTENANCE).filter(
        status__in=[Incident.Status.SCHEDULED, *ACTIVE_MAINTENANCE]
    )
    return {
        "page": build_page(components),
        "components": components.items,
        "incidents": unresolved_incidents(components),
        "scheduled_maintenances": _serialize_all(queryset.order_by("scheduled_for", "id"), components),
        "status": build_status(components),
    }


# --- Schema (documentation of the format; the builders above produce it) ---------------------------


class V2PageSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    url = serializers.CharField()
    time_zone = serializers.CharField()
    updated_at = serializers.DateTimeField()


class V2StatusSerializer(serializers.Serializer):
    indicator = serializers.ChoiceField(choices=INDICATORS)
    description = serializers.CharField()


class V2ComponentSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=COMPONENT_STATUSES)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    position = serializers.IntegerField()
    description = serializers.CharField(allow_null=True)
    showcase = serializers.BooleanField()
    start_date = serializers.DateField(allow_null=True)
    group_id = serializers.CharField(allow_null=True)
    page_id = serializers.CharField()
    group = serializers.BooleanField()
    only_show_if_degraded = serializers.BooleanField()
    components = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Group components only: member ids."
    )


class V2AffectedComponentSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="The component's id.")
    name = serializers.CharField()
    old_status = serializers.ChoiceField(choices=COMPONENT_STATUSES)
    new_status = serializers.ChoiceField(choices=COMPONENT_STATUSES)


class V2IncidentUpdateSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=INCIDENT_STATUS_VALUES + MAINTENANCE_STATUS_VALUES)
    body = serializers.CharField(allow_blank=True)
    incident_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    display_at = serializers.DateTimeField()
    affected_components = V2AffectedComponentSerializer(
        many=True, allow_null=True, help_text="The components whose level this update changed; null if none."
    )
    deliver_notifications = serializers.BooleanField()
    custom_tweet = serializers.CharField(allow_null=True)
    tweet_id = serializers.CharField(allow_null=True)


class V2IncidentSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=INCIDENT_STATUS_VALUES)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    monitoring_at = serializers.DateTimeField(allow_null=True)
    resolved_at = serializers.DateTimeField(allow_null=True)
    impact = serializers.ChoiceField(choices=IMPACTS)
    shortlink = serializers.CharField()
    started_at = serializers.DateTimeField()
    page_id = serializers.CharField()
    incident_updates = V2IncidentUpdateSerializer(many=True)
    components = V2ComponentSerializer(many=True)


class V2MaintenanceSerializer(V2IncidentSerializer):
    status = serializers.ChoiceField(choices=MAINTENANCE_STATUS_VALUES)
    scheduled_for = serializers.DateTimeField()
    scheduled_until = serializers.DateTimeField()


class V2StatusResponse(serializers.Serializer):
    page = V2PageSerializer()
    status = V2StatusSerializer()


class V2ComponentsResponse(serializers.Serializer):
    page = V2PageSerializer()
    components = V2ComponentSerializer(many=True)


class V2IncidentsResponse(serializers.Serializer):
    page = V2PageSerializer()
    incidents = V2IncidentSerializer(many=True)


class V2MaintenancesResponse(serializers.Serializer):
    page = V2PageSerializer()
    scheduled_maintenances = V2MaintenanceSerializer(many=True)


class V2SummaryResponse(serializers.Serializer):
    page = V2PageSerializer()
    components = V2ComponentSerializer(many=True)
    incidents = V2IncidentSerializer(many=True)
    scheduled_maintenances = V2MaintenanceSerializer(many=True)
    status = V2StatusSerializer()


PUBLIC_ERRORS = {
    429: OpenApiResponse(ErrorSerializer, description="Too many requests; see Retry-After."),
    503: OpenApiResponse(ErrorSerializer, description="Temporarily unavailable; see Retry-After."),
}


# --- Views -----------------------------------------------------------------------------------------


class PublicFeedView(APIView):
    """A public, anonymous, cacheable JSON read.

    No authentication at all: nothing here depends on who asks, and not looking at the
    session keeps the response free of cookies and `Vary: Cookie`.
    """

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes = [AnonymousThrottle]
    renderer_classes = [JSONRenderer]

    def build(self) -> dict[str, Any]:
        raise NotImplementedError

    def get(self, request: Request) -> Response:
        # Caching, the one-rebuild-per-change lock and the database-outage snapshot are
        # done around this view by edge.page_cache.public_page (see api/urls.py).
        return Response(self.build())

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        return finalize_public_response(request._request, response)


def _v2_view(
    name: str,
    summary: str,
    response: type[serializers.Serializer],
    build: Callable[[Components], dict[str, Any]],
    operation_id: str,
) -> type[PublicFeedView]:
    class View(PublicFeedView):
        def build(self) -> dict[str, Any]:
            return build(build_components(now=timezone.now()))

        @extend_schema(
            summary=summary,
            description="Statuspage v2 format: field names and enum strings as documented by Statuspage.",
            responses={200: response, **PUBLIC_ERRORS},
            tags=["statuspage-v2"],
            operation_id=operation_id,
            auth=[],
        )
        def get(self, request: Request) -> Response:
            return super().get(request)

    View.__name__ = View.__qualname__ = name
    return View


SummaryView = _v2_view("SummaryView", "Summary", V2SummaryResponse, build_summary, "v2_summary")
StatusView = _v2_view(
    "StatusView",
    "Status indicator",
    V2StatusResponse,
    lambda c: {"page": build_page(c), "status": build_status(c)},
    "v2_status",
)
ComponentsView = _v2_view(
    "ComponentsView",
    "Components",
    V2ComponentsResponse,
    lambda c: {"page": build_page(c), "components": c.items},
    "v2_components",
)
IncidentsView = _v2_view(
    "IncidentsView",
    "The 50 most recent incidents",
    V2IncidentsResponse,
    lambda c: {"page": build_page(c), "incidents": recent_incidents(c)},
    "v2_incidents",
)
UnresolvedIncidentsView = _v2_view(
    "UnresolvedIncidentsView",
    "Unresolved incidents",
    V2IncidentsResponse,
    lambda c: {"page": build_page(c), "incidents": unresolved_incidents(c)},
    "v2_incidents_unresolved",
)
MaintenancesView = _v2_view(
    "MaintenancesView",
    "The 50 most recent scheduled maintenances",
    V2MaintenancesResponse,
    lambda c: {"page": build_page(c), "scheduled_maintenances": recent_maintenances(c)},
    "v2_scheduled_maintenances",
)
UpcomingMaintenancesView = _v2_view(
    "UpcomingMaintenancesView",
    "Upcoming scheduled maintenances",
    V2MaintenancesResponse,
    lambda c: {"page": build_page(c), "scheduled_maintenances": upcoming_maintenances(c)},
    "v2_scheduled_maintenances_upcoming",
)
ActiveMaintenancesView = _v2_view(
    "ActiveMaintenancesView",
    "Active scheduled maintenances",
    V2MaintenancesResponse,
    lambda c: {"page": build_page(c), "scheduled_maintenances": active_maintenances(c)},
    "v2_scheduled_maintenances_active",
)
