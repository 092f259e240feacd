"""The v1 incidents and maintenance: list, read, file, update, resolve, edit, report.

The overall status, products and locations are in api/products.py, action items in
api/action_items.py; the names the router and URLs use are re-exported here."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet, prefetch_related_objects
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api import serializers as s
from api.action_items import ActionItemViewSet
from api.base import (
    DETAIL_WRITE_ERRORS,
    EDIT_ERRORS,
    READ_ERRORS,
    WRITE_ERRORS,
    APIMixin,
    acting_user,
    errors,
)
from api.filters import (
    IncidentFilterSerializer,
    MaintenanceFilterSerializer,
    filter_incidents,
)
from api.incident_parts import IncidentPartsMixin, ReportSectionsSerializer
from api.permissions import ReadPublicWriteStaff, is_staff
from api.products import LocationViewSet, OverallStatusView, ProductViewSet
from api.report_review import ReportReviewMixin, publish_errors
from incidents import selectors, services
from incidents.models import ImpactWindow, Incident, IncidentUpdate

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
WINDOW_PARAMETER = OpenApiParameter(
    "window_id", int, OpenApiParameter.PATH, description="Impact window id (from the incident's `windows`)."
)
UPDATE_PARAMETER = OpenApiParameter(
    "update_id", int, OpenApiParameter.PATH, description="Timeline update id (from the incident's `updates`)."
)
LIST_UPDATES: dict[str, Any] = {
    "summary": "List the timeline updates",
    "description": "Newest first (by shown time); each is editable with If-Match (staff).",
    "parameters": [ID_PARAMETER],
    "responses": {200: s.UpdateSerializer(many=True), **errors(404, *READ_ERRORS)},
}
IF_MATCH_NOTE = (
    " Send the incident's `ETag` (from a GET) as `If-Match` to refuse the write with 412 "
    "if someone changed the incident since."
)


class _IncidentViewSetBase(APIMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    kind: str = Incident.Kind.INCIDENT
    filter_serializer: type[Serializer] = IncidentFilterSerializer
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.IncidentSerializer
    lookup_field = "public_id"
    lookup_value_regex = "[^/]+"
    # No PUT on the incident itself (edits are partial: PATCH); the report action is a PUT.
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

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

    def _open(self, data: dict[str, Any], **kind_fields: Any) -> Response:
        """File an incident or a maintenance from the fields their create bodies share."""
        # No title guard here: a retry is made safe by its Idempotency-Key, and the same
        # title sent with another key is another incident.
        incident = services.incident_open(
            title=data["title"],
            impact=data.get("impact"),
            summary=data["summary"],
            body=data["body"],
            status=data["status"],
            windows=_window_specs(data["windows"]),
            created_by=acting_user(self.request),
            is_public=data["is_public"],
            internal_notes=data["internal_notes"],
            notify=data["notify"],
            **kind_fields,
        )
        response = self._answer(incident, status.HTTP_201_CREATED)
        response["Location"] = self._detail_url(incident)
        return response

    def _detail_url(self, incident: Incident, suffix: str = "") -> str:
        basename = "maintenance" if incident.is_maintenance else "incident"
        return reverse(f"{basename}-detail", args=[incident.public_id]) + suffix

    def post_update(self, request: Request) -> Response:
        incident = self.get_object()
        data = self._input(s.UpdateCreateSerializer)
        update = services.incident_post_update_with_levels(
            incident=incident,
            status=data["status"],
            body=data["body"],
            levels=[
                services.LevelSpec(product=lv["product"], location=lv["location"], level=lv["level"])
                for lv in data["levels"]
            ],
            author=acting_user(request),
            display_at=data["display_at"],
            notify=data["notify"],
        )
        # The update itself, so its id is at hand even when it is backdated.
        return Response(
            s.UpdateSerializer(update).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": self._detail_url(incident, f"updates/{update.pk}/")},
        )

    def _timeline_update(self, update_id: str) -> IncidentUpdate:
        return get_object_or_404(IncidentUpdate, pk=update_id, incident=self.get_object())

    def update_detail(self, request: Request, update_id: str) -> Response:
        update = self._timeline_update(update_id)
        if request.method == "PATCH":
            data = self._input(s.UpdateEditSerializer)
            update = services.incident_update_edit(
                update=update, body=data["body"], actor=acting_user(request)
            )
        return Response(s.UpdateSerializer(update).data)

    def current_representation(self) -> Any:
        # A timeline update is its own resource for If-Match: a correction races other
        # corrections of the same text, not unrelated updates of the incident.
        if self.action == "timeline_update":
            return s.UpdateSerializer(self._timeline_update(self.kwargs["update_id"])).data
        # A window likewise: its If-Match is the ETag its own GET returns.
        if self.action == "window":
            window = self._window(self.get_object(), self.kwargs["window_id"])
            return s.WindowSerializer(window).data
        return super().current_representation()

    # --- Edits ----------------------------------------------------------------------------

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incident = self.get_object()
        changes = self._input(s.IncidentEditSerializer)
        services.incident_edit(incident=incident, changes=changes, actor=acting_user(request))
        return self._answer(incident)

    def _window(self, incident: Incident, window_id: str) -> ImpactWindow:
        queryset = ImpactWindow.objects.select_related("product", "location", "incident")
        if not is_staff(self.request):
            queryset = queryset.filter(product__is_public=True)
        return get_object_or_404(queryset, pk=window_id, incident=incident)

    def add_window(self, request: Request) -> Response:
        incident = self.get_object()
        data = self._input(s.WindowInputSerializer)
        window = services.impact_window_add(incident=incident, **data, actor=acting_user(request))
        return Response(
            s.WindowSerializer(window).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": self._detail_url(incident, f"windows/{window.pk}/")},
        )

    def window_detail(self, request: Request, window_id: str) -> Response:
        incident = self.get_object()
        window = self._window(incident, window_id)
        if request.method == "DELETE":
            services.impact_window_delete(window=window, actor=acting_user(request))
            return Response(status=status.HTTP_204_NO_CONTENT)
        if request.method == "PATCH":
            changes = self._input(s.WindowEditSerializer)
            current = {
                "product": window.product,
                "location": window.location,
                "level": window.level,
                "started_at": window.started_at,
                "ended_at": window.ended_at,
                "description": window.description,
            }
            window = services.impact_window_edit(
                window=window, **{**current, **changes}, actor=acting_user(request)
            )
            window = self._window(incident, str(window.pk))
        return Response(s.WindowSerializer(window).data)

    def end_window(self, request: Request, window_id: str) -> Response:
        incident = self.get_object()
        window = self._window(incident, window_id)
        data = self._input(s.WindowEndSerializer)
        window = services.impact_window_close(
            window=window, ended_at=data["ended_at"], actor=acting_user(request)
        )
        return Response(s.WindowSerializer(self._window(incident, str(window.pk))).data)

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


class _EditableIncidentViewSet(ReportReviewMixin, IncidentPartsMixin, _IncidentViewSetBase):
    """Edits, timeline reads and windows, shared by incidents and maintenance."""

    @extend_schema(
        summary="Edit an incident",
        description=(
            "Change the title, summary, impact or visibility (`is_public`); send only what "
            "changes. Status moves through timeline updates, not here (staff, write key)." + IF_MATCH_NOTE
        ),
        parameters=[ID_PARAMETER],
        request=s.IncidentEditSerializer,
        responses={200: s.IncidentSerializer, **errors(*EDIT_ERRORS)},
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().partial_update(request, *args, **kwargs)

    @extend_schema(
        methods=["GET"],
        summary="Get a timeline update",
        parameters=[ID_PARAMETER, UPDATE_PARAMETER],
        responses={200: s.UpdateSerializer, **errors(404, *READ_ERRORS)},
    )
    @extend_schema(
        methods=["PATCH"],
        summary="Correct a timeline update",
        description=(
            "Replace a published update's text (Markdown). The previous text is kept in the "
            "update's history, `edited_at` is set, the public timeline marks the update as "
            "edited, and subscribers are not notified again (staff). Send the update's `ETag` "
            "(from a GET of it) as `If-Match` to refuse the write with 412 if it changed since."
        ),
        parameters=[ID_PARAMETER, UPDATE_PARAMETER],
        request=s.UpdateEditSerializer,
        responses={200: s.UpdateSerializer, **errors(*EDIT_ERRORS)},
    )
    @action(detail=True, methods=["get", "patch"], url_path=r"updates/(?P<update_id>[0-9]+)")
    def timeline_update(self, request: Request, public_id: str, update_id: str) -> Response:
        return self.update_detail(request, update_id)

    @extend_schema(
        methods=["GET"],
        summary="List the impact windows",
        parameters=[ID_PARAMETER],
        responses={200: s.WindowSerializer(many=True), **errors(404, *READ_ERRORS)},
    )
    @extend_schema(
        methods=["POST"],
        summary="Add an impact window",
        description="One product (and optionally location) at one level from a start; open if no end (staff).",
        parameters=[ID_PARAMETER],
        request=s.WindowInputSerializer,
        responses={201: s.WindowSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["get", "post"], url_path="windows", pagination_class=None)
    def windows(self, request: Request, public_id: str) -> Response:
        return self.list_windows() if request.method == "GET" else self.add_window(request)

    @extend_schema(
        methods=["GET"],
        summary="Get an impact window",
        parameters=[ID_PARAMETER, WINDOW_PARAMETER],
        responses={200: s.WindowSerializer, **errors(404, *READ_ERRORS)},
    )
    @extend_schema(
        methods=["PATCH"],
        summary="Change an impact window",
        description="Correct its product, location, level, times or description; send only what changes (staff)."
        + IF_MATCH_NOTE,
        parameters=[ID_PARAMETER, WINDOW_PARAMETER],
        request=s.WindowEditSerializer,
        responses={200: s.WindowSerializer, **errors(*EDIT_ERRORS)},
    )
    @extend_schema(
        methods=["DELETE"],
        summary="Remove an impact window",
        description="For a window filed by mistake; to say the impact is over, end it instead (staff)."
        + IF_MATCH_NOTE,
        parameters=[ID_PARAMETER, WINDOW_PARAMETER],
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
    )
    @action(detail=True, methods=["get", "patch", "delete"], url_path=r"windows/(?P<window_id>[0-9]+)")
    def window(self, request: Request, public_id: str, window_id: str) -> Response:
        return self.window_detail(request, window_id)

    @extend_schema(
        summary="End an impact window",
        description="The product is back to normal from `ended_at` (default now), short of resolving (staff).",
        parameters=[ID_PARAMETER, WINDOW_PARAMETER],
        request=s.WindowEndSerializer,
        responses={200: s.WindowSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path=r"windows/(?P<window_id>[0-9]+)/end")
    def end(self, request: Request, public_id: str, window_id: str) -> Response:
        return self.end_window(request, window_id)


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
class IncidentViewSet(_EditableIncidentViewSet):
    kind = Incident.Kind.INCIDENT
    filter_serializer = IncidentFilterSerializer
    query_serializers = {"list": IncidentFilterSerializer}

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
        # Impact began when the earliest window did, unless the caller says otherwise; with
        # no window, at the latest when it was detected (not "now", which would put the
        # detection before the start and refuse the request).
        earliest = min((w["started_at"] for w in data["windows"]), default=data["detected_at"])
        return self._open(
            data,
            kind=Incident.Kind.INCIDENT,
            started_at=data["started_at"] or earliest,
            detected_at=data["detected_at"],
            recurrence_of=data["recurrence_of"],
            first_update_at=data["first_update_at"],
        )

    @extend_schema(methods=["GET"], **LIST_UPDATES)
    @extend_schema(
        methods=["POST"],
        summary="Post a timeline update",
        description="Its status becomes the incident's; `resolved` resolves it (staff).",
        parameters=[ID_PARAMETER],
        request=s.UpdateCreateSerializer,
        responses={201: s.UpdateSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["get", "post"], url_path="updates", pagination_class=None)
    def updates(self, request: Request, public_id: str) -> Response:
        return self.list_updates() if request.method == "GET" else self.post_update(request)

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
        methods=["GET"],
        summary="Get the incident report",
        description="Its kind, status and sections; non-staff callers see it once published.",
        parameters=[ID_PARAMETER],
        responses={200: s.ReportSerializer, **errors(404, *READ_ERRORS)},
    )
    @extend_schema(
        methods=["PATCH"],
        summary="Edit report sections",
        description="Send only the sections that change (staff). Send the report's `ETag` (from "
        "its GET) as `If-Match` to refuse the write with 412 if it changed since.",
        parameters=[ID_PARAMETER],
        request=ReportSectionsSerializer,
        responses={200: s.ReportSerializer, **errors(*EDIT_ERRORS)},
    )
    @extend_schema(
        methods=["PUT"],
        summary="Write the incident report",
        description="Creates or edits the report (draft until published; staff).",
        parameters=[ID_PARAMETER],
        request=s.ReportSaveSerializer,
        responses={200: s.IncidentSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["get", "put", "patch"])
    def report(self, request: Request, public_id: str) -> Response:
        if request.method != "PUT":
            return self.report_sections(request)
        incident = self.get_object()
        data = self._input(s.ReportSaveSerializer)
        services.report_save(incident=incident, **data, actor=acting_user(request))
        return self._answer(incident)

    @extend_schema(
        summary="Publish the incident report",
        description="The report must be approved (409 `not_approved` otherwise) and the incident "
        "resolved; a Report approver other than the author publishes it (staff).",
        parameters=[ID_PARAMETER],
        request=s.ReportPublishSerializer,
        responses={200: s.IncidentSerializer, **publish_errors()},
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
class MaintenanceViewSet(_EditableIncidentViewSet):
    kind = Incident.Kind.MAINTENANCE
    filter_serializer = MaintenanceFilterSerializer
    query_serializers = {"list": MaintenanceFilterSerializer}

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
        return self._open(
            data,
            kind=Incident.Kind.MAINTENANCE,
            scheduled_for=data["scheduled_for"],
            scheduled_until=data["scheduled_until"],
        )

    @extend_schema(methods=["GET"], **LIST_UPDATES)
    @extend_schema(
        methods=["POST"],
        summary="Post a maintenance update",
        description="`in_progress`, `verifying`, or `completed` (which ends it; staff).",
        parameters=[ID_PARAMETER],
        request=s.UpdateCreateSerializer,
        responses={201: s.UpdateSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["get", "post"], url_path="updates", pagination_class=None)
    def updates(self, request: Request, public_id: str) -> Response:
        return self.list_updates() if request.method == "GET" else self.post_update(request)

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


__all__ = [
    "ActionItemViewSet",
    "IncidentViewSet",
    "LocationViewSet",
    "MaintenanceViewSet",
    "OverallStatusView",
    "ProductViewSet",
]
