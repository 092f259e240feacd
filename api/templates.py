"""The v1 message templates (staff only): the ready-made titles and messages staff start an
incident or an update from, written through the same service as the console's page."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.base import EDIT_ERRORS, STAFF_READ_ERRORS, WRITE_ERRORS, CrudViewSet, acting_user, errors
from api.catalogue import validated
from api.permissions import StaffOnly
from incidents import services
from incidents.message_templates import MessageTemplate
from incidents.models import IncidentStatus


class TemplateSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(
        choices=IncidentStatus.choices, allow_blank=True, read_only=True, help_text="Empty: none."
    )

    class Meta:
        model = MessageTemplate
        fields = ["id", "name", "kind", "title", "status", "body", "created_at", "updated_at"]
        read_only_fields = fields


class TemplateWriteSerializer(s.StrictSerializer):
    """On PATCH send only what changes."""

    name = s.single_line(max_length=100, help_text="What staff pick it by; unique.")
    kind = serializers.ChoiceField(choices=MessageTemplate.Kind.choices)
    title = s.single_line(required=False, allow_blank=True, help_text="Required for `incident` templates.")
    status = serializers.ChoiceField(
        choices=IncidentStatus.choices,
        allow_blank=True,
        required=False,
        help_text="The status it is usually posted with; empty: none.",
    )
    body = s.text(required_text=True, help_text="The public message (Markdown).")


TEMPLATE_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The template's id.")
IF_MATCH = " Send its `ETag` (from a GET) as `If-Match` to refuse the write with 412 if it changed since."


@extend_schema_view(
    list=extend_schema(
        summary="List message templates (staff)",
        responses={200: TemplateSerializer(many=True), **errors(400, 404, *STAFF_READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a message template (staff)",
        parameters=[TEMPLATE_ID],
        responses={200: TemplateSerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create a message template (staff)",
        request=TemplateWriteSerializer,
        responses={201: TemplateSerializer, **errors(*WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Change a message template (staff)",
        description="Send only what changes." + IF_MATCH,
        parameters=[TEMPLATE_ID],
        request=TemplateWriteSerializer,
        responses={200: TemplateSerializer, **errors(*EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete a message template (staff)",
        description="Nothing refers to a template: what was posted from it keeps its words." + IF_MATCH,
        parameters=[TEMPLATE_ID],
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
    ),
)
class TemplateViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = TemplateSerializer
    lookup_value_regex = "[0-9]+"
    queryset = MessageTemplate.objects.order_by("kind", "name")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = validated(TemplateWriteSerializer, request.data)
        template = services.template_save(**data, actor=acting_user(request))
        return self.created(template, self.get_serializer(template).data)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        template = self.get_object()
        changes = validated(TemplateWriteSerializer, request.data, partial=True)
        current = {name: getattr(template, name) for name in ("name", "kind", "title", "status", "body")}
        template = services.template_save(
            template=template, **{**current, **changes}, actor=acting_user(request)
        )
        return Response(self.get_serializer(template).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.template_delete(template=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
