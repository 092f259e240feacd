"""The v1 API views: thin. They parse input, call one selector or service, and render.

Visibility: anonymous callers and non-staff tokens see public incidents, their windows
on public products, and a report only once it is published; staff tokens see
everything. Writes need a staff token and go through `incidents.services`, exactly as
the admin does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet, prefetch_related_objects
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.pagination import BasePagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import APIRootView
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from api import serializers as s
from api.authentication import API_AUTHENTICATION
from api.filters import (
    ActionItemFilterSerializer,
    IncidentFilterSerializer,
    MaintenanceFilterSerializer,
    Pagination,
    filter_incidents,
    order_by,
)
from api.parsers import DepthLimitedJSONParser
from api.permissions import ReadPublicWriteStaff, StaffOnly, is_staff
from api.throttling import DEFAULT_THROTTLES
from edge.http import finalize_public_response, memoize_public
from incidents import selectors, services
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentUpdate, Location, Product

# --- Documentation helpers -------------------------------------------------------------------


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The error responses of an operation, all with the one error body."""
    descriptions = {
        400: "Invalid input (query string or body).",
        401: "No credentials: send `Authorization: Token <key>`.",
        403: "The token's user is not staff.",
        404: "Not found, or not visible to this caller.",
        429: "Too many requests; see Retry-After.",
        503: "Temporarily unavailable; see Retry-After.",
    }
    return {code: OpenApiResponse(s.ErrorSerializer, description=descriptions[code]) for code in codes}


def acting_user(request: Request) -> User:
    """The staff user behind a write (the permission class has already checked)."""
    user = request.user
    assert isinstance(user, User)
    return user


READ_ERRORS = (429, 503)
WRITE_ERRORS = (400, 401, 403, 429, 503)
DETAIL_WRITE_ERRORS = (400, 401, 403, 404, 429, 503)
STAFF_READ_ERRORS = (401, 403, 429, 503)


class APIMixin(APIView):
    """Policies shared by every v1 view, and the public caching contract on reads."""

    authentication_classes = API_AUTHENTICATION
    throttle_classes = DEFAULT_THROTTLES
    renderer_classes = [JSONRenderer]
    parser_classes = [DepthLimitedJSONParser]
    pagination_class: type[BasePagination] | None = Pagination

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        return finalize_public_response(request._request, response)

    def cached(self, build: Callable[[], Response]) -> Response:
        """Memoise an anonymous read per public-state version (see edge.http)."""

        def build_data() -> tuple[int, Any]:
            response = build()
            return response.status_code, response.data

        status_code, data = memoize_public(self.request._request, build_data, prefix="api-v1")
        return Response(data, status=status_code)

    def validated_query(self, serializer_class: type[Serializer]) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.query_params)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


class APIRoot(APIMixin, APIRootView):
    """Links to the v1 resources."""


# --- Overall status ----------------------------------------------------------------------------


class OverallStatusView(APIMixin, APIView):
    permission_classes = [ReadPublicWriteStaff]

    @extend_schema(
        summary="Overall status",
        description="The page indicator (Statuspage rules) and each public product's current status.",
        responses={200: s.OverallStatusSerializer, **errors(*READ_ERRORS)},
        tags=["status"],
    )
    def get(self, request: Request) -> Response:
        return self.cached(self._build)

    def _build(self) -> Response:
        summary = selectors.status_summary(now=timezone.now())
        data = {
            "indicator": summary.banner.indicator,
            "description": summary.banner.description,
            "active_incidents": len(summary.unresolved_impacts),
            "active_maintenance": selectors.maintenance_active_public().count(),
            "products": [
                {"id": p.public_id, "slug": p.slug, "name": p.name, "status": summary.statuses[p.pk]}
                for p in summary.products
            ],
        }
        return Response(data)


# --- Products and locations ---------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List products",
        description="Public products for everyone; staff tokens also see staff-only products.",
        responses={200: s.ProductSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a product", responses={200: s.ProductSerializer, **errors(404, *READ_ERRORS)}
    ),
)
class ProductViewSet(APIMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.ProductSerializer
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet[Product]:
        if is_staff(self.request):
            return Product.objects.select_related("group").order_by(
                "group__position", "group__name", "position", "name"
            )
        return selectors.products_public()

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "statuses": selectors.product_statuses()}

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(ProductViewSet, self).list(request, *args, **kwargs))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(ProductViewSet, self).retrieve(request, *args, **kwargs))


@extend_schema_view(
    list=extend_schema(
        summary="List locations",
        responses={200: s.LocationSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a location", responses={200: s.LocationSerializer, **errors(404, *READ_ERRORS)}
    ),
)
class LocationViewSet(APIMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.LocationSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    queryset = Location.objects.select_related("parent").order_by("name")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(LocationViewSet, self).list(request, *args, **kwargs))


# --- Incidents and maintenance -----------------------------------------------------------------


def _window_specs(windows: list[dict[str, Any]]) -> list[services.WindowSpec]:
    return [
        services.WindowSpec(
            product=w["product"],
            level=w["level"],
            started_at=w["started_at"],
            ended_at=w.get("ended_at"),
            location=w.get("location"),
            description=w.get("description", ""),
        )
        for w in windows
    ]


ID_PARAMETER = OpenApiParameter("public_id", str, OpenApiParameter.PATH, description="Incident id.")


class _IncidentViewSetBase(APIMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    kind: str = Incident.Kind.INCIDENT
    filter_serializer: type[Serializer] = IncidentFilterSerializer
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.IncidentSerializer
    lookup_field = "public_id"
    lookup_value_regex = "[^/]+"

    def _prefetch(self) -> list[Prefetch]:
        windows = ImpactWindow.objects.select_related("product", "location").order_by("started_at", "id")
        if not is_staff(self.request):
            windows = windows.filter(product__is_public=True)
        return [
            Prefetch("windows", queryset=windows),
            Prefetch("updates", queryset=IncidentUpdate.objects.order_by("-display_at", "-id")),
        ]

    def get_queryset(self) -> QuerySet[Incident]:
        base = Incident.objects.all() if is_staff(self.request) else selectors.incidents_public()
        return (
            base.filter(kind=self.kind)
            .select_related("report", "recurrence_of")
            .prefetch_related(*self._prefetch())
        )

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "is_staff": is_staff(self.request)}

    def get_object(self) -> Incident:
        # The one access gate for incidents; then the same prefetches as the list.
        incident = selectors.incident_get_for_user(
            public_id=self.kwargs[self.lookup_field], user=self.request.user
        )
        if incident.kind != self.kind:
            raise Http404("No such incident.")
        prefetch_related_objects([incident], "report", "recurrence_of", *self._prefetch())
        return incident

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = self.validated_query(self.filter_serializer)

        def build() -> Response:
            queryset = filter_incidents(self.get_queryset(), params, staff=is_staff(request))
            page = self.paginate_queryset(queryset)
            assert page is not None
            return self.get_paginated_response(self.get_serializer(page, many=True).data)

        return self.cached(build)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: Response(self.get_serializer(self.get_object()).data))

    def _answer(self, incident: Incident, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=incident.pk)
        return Response(self.get_serializer(fresh).data, status=code)

    def _input(self, serializer_class: type[Serializer]) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def post_update(self, request: Request) -> Response:
        incident = self.get_object()
        data = self._input(s.UpdateCreateSerializer)
        services.incident_post_update(
            incident=incident,
            status=data["status"],
            body=data["body"],
            author=acting_user(request),
            display_at=data["display_at"],
            notify=data["notify"],
        )
        return self._answer(incident, status.HTTP_201_CREATED)

    def resolve_incident(self, request: Request) -> Response:
        incident = self.get_object()
        data = self._input(s.ResolveSerializer)
        services.incident_resolve(
            incident=incident,
            body=data["body"],
            author=acting_user(request),
            resolved_at=data["resolved_at"],
            notify=data["notify"],
        )
        return self._answer(incident)


@extend_schema_view(
    list=extend_schema(
        summary="List incidents",
        description=(
            "Newest first by default. Anonymous callers and non-staff tokens see public "
            "incidents only, their impact on public products only, and the report once published."
        ),
        parameters=[IncidentFilterSerializer],
        responses={200: s.IncidentSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
)
class IncidentViewSet(_IncidentViewSetBase):
    kind = Incident.Kind.INCIDENT
    filter_serializer = IncidentFilterSerializer

    @extend_schema(
        summary="Get an incident",
        parameters=[ID_PARAMETER],
        responses={200: s.IncidentSerializer, **errors(404, *READ_ERRORS)},
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(
        summary="Open an incident",
        description="Files the incident with its impact windows and first timeline entry (staff).",
        request=s.IncidentCreateSerializer,
        responses={201: s.IncidentSerializer, **errors(*WRITE_ERRORS)},
    )
    def create(self, request: Request) -> Response:
        data = self._input(s.IncidentCreateSerializer)
        incident = services.incident_open(
            title=data["title"],
            impact=data["impact"],
            started_at=data["started_at"],
            summary=data["summary"],
            body=data["body"],
            status=data["status"],
            kind=Incident.Kind.INCIDENT,
            windows=_window_specs(data["windows"]),
            created_by=acting_user(request),
            is_public=data["is_public"],
            detected_at=data["detected_at"],
            recurrence_of=data["recurrence_of"],
            internal_notes=data["internal_notes"],
            notify=data["notify"],
        )
        return self._answer(incident, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Post a timeline update",
        description="Its status becomes the incident's; `resolved` resolves it (staff).",
        parameters=[ID_PARAMETER],
        request=s.UpdateCreateSerializer,
        responses={201: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="updates")
    def updates(self, request: Request, public_id: str) -> Response:
        return self.post_update(request)

    @extend_schema(
        summary="Resolve an incident",
        description="Closes its open impact windows and posts the resolution (staff).",
        parameters=[ID_PARAMETER],
        request=s.ResolveSerializer,
        responses={200: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def resolve(self, request: Request, public_id: str) -> Response:
        return self.resolve_incident(request)

    @extend_schema(
        summary="Write the incident report",
        description="Creates or edits the report (draft until published; staff).",
        parameters=[ID_PARAMETER],
        request=s.ReportSaveSerializer,
        responses={200: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["put"])
    def report(self, request: Request, public_id: str) -> Response:
        incident = self.get_object()
        data = self._input(s.ReportSaveSerializer)
        services.report_save(incident=incident, **data)
        return self._answer(incident)

    @extend_schema(
        summary="Publish the incident report",
        description="The incident must be resolved and the report must have a summary (staff).",
        parameters=[ID_PARAMETER],
        request=s.ReportPublishSerializer,
        responses={200: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="report/publish")
    def publish_report(self, request: Request, public_id: str) -> Response:
        incident = self.get_object()
        data = self._input(s.ReportPublishSerializer)
        services.report_publish(
            incident=incident, published_at=data["published_at"], actor=acting_user(request)
        )
        return self._answer(incident)


@extend_schema_view(
    list=extend_schema(
        summary="List scheduled maintenance",
        parameters=[MaintenanceFilterSerializer],
        responses={200: s.IncidentSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
)
class MaintenanceViewSet(_IncidentViewSetBase):
    kind = Incident.Kind.MAINTENANCE
    filter_serializer = MaintenanceFilterSerializer

    @extend_schema(
        summary="Get a maintenance",
        parameters=[ID_PARAMETER],
        responses={200: s.IncidentSerializer, **errors(404, *READ_ERRORS)},
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(
        summary="Schedule a maintenance",
        description="With its window of time and, optionally, the products it affects (staff).",
        request=s.MaintenanceCreateSerializer,
        responses={201: s.IncidentSerializer, **errors(*WRITE_ERRORS)},
    )
    def create(self, request: Request) -> Response:
        data = self._input(s.MaintenanceCreateSerializer)
        incident = services.incident_open(
            title=data["title"],
            impact=data["impact"],
            summary=data["summary"],
            body=data["body"],
            status=data["status"],
            kind=Incident.Kind.MAINTENANCE,
            scheduled_for=data["scheduled_for"],
            scheduled_until=data["scheduled_until"],
            windows=_window_specs(data["windows"]),
            created_by=acting_user(request),
            is_public=data["is_public"],
            internal_notes=data["internal_notes"],
            notify=data["notify"],
        )
        return self._answer(incident, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Post a maintenance update",
        description="`in_progress`, `verifying`, or `completed` (which ends it; staff).",
        parameters=[ID_PARAMETER],
        request=s.UpdateCreateSerializer,
        responses={201: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="updates")
    def updates(self, request: Request, public_id: str) -> Response:
        return self.post_update(request)

    @extend_schema(
        summary="End a maintenance",
        description="Marks it completed and closes its open windows (staff).",
        parameters=[ID_PARAMETER],
        request=s.ResolveSerializer,
        responses={200: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, public_id: str) -> Response:
        return self.resolve_incident(request)


# --- Staff-only: action items --------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List action items (staff)",
        parameters=[ActionItemFilterSerializer],
        responses={200: s.ActionItemSerializer(many=True), **errors(400, 404, *STAFF_READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get an action item (staff)",
        responses={200: s.ActionItemSerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create an action item (staff)",
        request=s.ActionItemCreateSerializer,
        responses={201: s.ActionItemSerializer, **errors(*WRITE_ERRORS)},
    ),
)
class ActionItemViewSet(
    APIMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    permission_classes = [StaffOnly]
    serializer_class = s.ActionItemSerializer
    queryset = ActionItem.objects.select_related("incident", "owner")
    lookup_value_regex = "[^/]+"

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = self.validated_query(ActionItemFilterSerializer)
        queryset = self.get_queryset()
        if params.get("incident"):
            queryset = queryset.filter(incident__public_id=params["incident"])
        if params.get("status"):
            queryset = queryset.filter(status__in=sorted(params["status"]))
        page = self.paginate_queryset(order_by(queryset, params["ordering"]))
        assert page is not None
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = s.ActionItemCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item = services.action_item_create(**serializer.validated_data)
        return Response(self.get_serializer(item).data, status=status.HTTP_201_CREATED)


class APINotFound(APIView):
    """Any other URL under /api/: a 404 in the API's error shape, not the HTML page."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    throttle_classes = DEFAULT_THROTTLES
    renderer_classes = [JSONRenderer]
    schema = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        raise NotFound()
