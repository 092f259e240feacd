"""The v1 postmortem timeline (staff only), under an incident: its staff timeline entries
and its links to other incidents (list, create, get, change, delete; `If-Match` on
changes and deletes, as elsewhere), and its automatic timeline (read-only), merged by
postmortems.selectors. Writes go through postmortems.services."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import DefaultRouter

from api import serializers as s
from api.base import (
    DETAIL_WRITE_ERRORS,
    EDIT_ERRORS,
    STAFF_READ_ERRORS,
    APIMixin,
    acting_user,
    errors,
)
from api.catalogue import validated
from api.permissions import StaffOnly
from incidents.models import Incident
from postmortems import selectors, services
from postmortems.models import IncidentLink, LinkKind, Phase, TimelineEntry, Visibility

INCIDENT = OpenApiParameter(
    "incident_public_id", str, OpenApiParameter.PATH, description="The incident's id."
)
ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The record's id.")
PREFIX = "incidents/(?P<incident_public_id>[a-z0-9]{12})"


class TimelineEntrySerializer(serializers.ModelSerializer):
    author: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = TimelineEntry
        fields = [
            "id",
            "at",
            "text",
            "text_html",
            "phase",
            "visibility",
            "author",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class TimelineEntryEditSerializer(s.StrictSerializer):
    """A staff entry; on a change, send only what changes."""

    at = serializers.DateTimeField(help_text="When it happened (aware, not in the future).")
    text = s.text(required_text=True, help_text="Markdown.")
    phase = serializers.ChoiceField(choices=Phase.choices, default=Phase.OTHER)
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.INTERNAL)


class IncidentLinkSerializer(serializers.ModelSerializer):
    from_incident: serializers.SlugRelatedField[Incident] = serializers.SlugRelatedField(
        slug_field="public_id", read_only=True
    )
    to_incident: serializers.SlugRelatedField[Incident] = serializers.SlugRelatedField(
        slug_field="public_id", read_only=True
    )

    class Meta:
        model = IncidentLink
        fields = ["id", "from_incident", "to_incident", "kind", "created_at"]
        read_only_fields = fields


class IncidentLinkCreateSerializer(s.StrictSerializer):
    to_incident = serializers.SlugRelatedField(
        slug_field="public_id", queryset=Incident.objects.all(), help_text="The other incident's id."
    )
    kind = serializers.ChoiceField(
        choices=LinkKind.choices, help_text="This incident is a `recurrence_of` or `related_to` the other."
    )


class IncidentLinkEditSerializer(s.StrictSerializer):
    kind = serializers.ChoiceField(choices=LinkKind.choices)


class TimelineRowSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    kind = serializers.CharField(
        help_text="alert, impact_start, impact_end, detection, declaration, "
        "update, level_change, mitigation, resolution, report or entry."
    )
    phase = serializers.ChoiceField(choices=Phase.choices)
    text = serializers.CharField()
    is_public = serializers.BooleanField()
    entry = serializers.IntegerField(
        source="entry.pk", allow_null=True, default=None, help_text="A staff entry's id."
    )


class _UnderIncident(APIMixin):
    permission_classes = [StaffOnly]
    pagination_class: type[BasePagination] | None = None  # one incident's records: a short list
    lookup_value_regex = "[0-9]+"

    def incident(self) -> Incident:
        incident = Incident.objects.filter(public_id=self.kwargs["incident_public_id"]).first()
        if incident is None:
            raise Http404("No such incident.")
        return incident


_ENTRY_DOCS = {
    "list": extend_schema(
        summary="List an incident's timeline entries (staff)",
        parameters=[INCIDENT],
        responses={200: TimelineEntrySerializer(many=True), **errors(404, *STAFF_READ_ERRORS)},
    ),
    "retrieve": extend_schema(
        summary="Get a timeline entry (staff)",
        parameters=[INCIDENT, ID],
        responses={200: TimelineEntrySerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
    "create": extend_schema(
        summary="Add a timeline entry (staff)",
        parameters=[INCIDENT],
        request=TimelineEntryEditSerializer,
        responses={201: TimelineEntrySerializer, **errors(*DETAIL_WRITE_ERRORS)},
    ),
    "partial_update": extend_schema(
        summary="Change a timeline entry (staff)",
        description="Send only what changes; send its `ETag` as `If-Match` to refuse the write with 412 "
        "if it changed since.",
        parameters=[INCIDENT, ID],
        request=TimelineEntryEditSerializer,
        responses={200: TimelineEntrySerializer, **errors(*EDIT_ERRORS)},
    ),
    "destroy": extend_schema(
        summary="Delete a timeline entry (staff)",
        parameters=[INCIDENT, ID],
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
    ),
}


@extend_schema_view(**_ENTRY_DOCS)
class TimelineEntryViewSet(
    _UnderIncident,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = TimelineEntrySerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[TimelineEntry]:
        return selectors.timeline_entries(incident=self.incident())

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incident = self.incident()
        data = validated(TimelineEntryEditSerializer, request.data)
        entry = services.timeline_entry_create(incident=incident, actor=acting_user(request), **data)
        return Response(
            self.get_serializer(entry).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("timeline-entry-detail", args=[incident.public_id, entry.pk])},
        )

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        entry = self.get_object()
        changes = validated(TimelineEntryEditSerializer, request.data, partial=True)
        entry = services.timeline_entry_edit(entry=entry, changes=changes, actor=acting_user(request))
        return Response(self.get_serializer(entry).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.timeline_entry_delete(entry=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


_LINK_DOCS = {
    "list": extend_schema(
        summary="List an incident's links, both ways (staff)",
        parameters=[INCIDENT],
        responses={200: IncidentLinkSerializer(many=True), **errors(404, *STAFF_READ_ERRORS)},
    ),
    "retrieve": extend_schema(
        summary="Get an incident link (staff)",
        parameters=[INCIDENT, ID],
        responses={200: IncidentLinkSerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
    "create": extend_schema(
        summary="Link the incident to another (staff)",
        description="One link per pair of incidents, whichever way round; never to itself (400).",
        parameters=[INCIDENT],
        request=IncidentLinkCreateSerializer,
        responses={201: IncidentLinkSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    ),
    "partial_update": extend_schema(
        summary="Change a link's kind (staff)",
        parameters=[INCIDENT, ID],
        request=IncidentLinkEditSerializer,
        responses={200: IncidentLinkSerializer, **errors(*EDIT_ERRORS)},
    ),
    "destroy": extend_schema(
        summary="Remove an incident link (staff)",
        parameters=[INCIDENT, ID],
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
    ),
}


@extend_schema_view(**_LINK_DOCS)
class IncidentLinkViewSet(
    _UnderIncident,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = IncidentLinkSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[IncidentLink]:
        incident = self.incident()
        return (
            IncidentLink.objects.filter(Q(from_incident=incident) | Q(to_incident=incident))
            .select_related("from_incident", "to_incident")
            .order_by("id")
        )

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incident = self.incident()
        data = validated(IncidentLinkCreateSerializer, request.data)
        link = services.incident_link_create(
            from_incident=incident,
            to_incident=data["to_incident"],
            kind=data["kind"],
            actor=acting_user(request),
        )
        return Response(
            self.get_serializer(link).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("incident-link-detail", args=[incident.public_id, link.pk])},
        )

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        link = self.get_object()
        data = validated(IncidentLinkEditSerializer, request.data, partial=True)
        if "kind" in data:
            link = services.incident_link_edit(link=link, kind=data["kind"], actor=acting_user(request))
        return Response(self.get_serializer(link).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.incident_link_delete(link=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(
        summary="An incident's automatic timeline (staff)",
        description="Merged from alert intake, impact windows, updates, level changes, the report and "
        "the staff entries, earliest first; internal rows included. Read-only.",
        parameters=[INCIDENT],
        responses={200: TimelineRowSerializer(many=True), **errors(404, *STAFF_READ_ERRORS)},
    )
)
class TimelineViewSet(_UnderIncident, viewsets.GenericViewSet):
    serializer_class = TimelineRowSerializer

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        timeline = selectors.incident_timeline(incident=self.incident(), public=False)
        return Response(TimelineRowSerializer(timeline.rows, many=True).data)


def register(router: DefaultRouter) -> None:
    router.register(f"{PREFIX}/timeline-entries", TimelineEntryViewSet, basename="timeline-entry")
    router.register(f"{PREFIX}/links", IncidentLinkViewSet, basename="incident-link")
    router.register(f"{PREFIX}/timeline", TimelineViewSet, basename="incident-timeline")
