"""The v1 action items (staff only): what incident reports commit the team to do."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.base import (
    DETAIL_WRITE_ERRORS,
    EDIT_ERRORS,
    STAFF_READ_ERRORS,
    WRITE_ERRORS,
    CrudViewSet,
    acting_user,
    errors,
)
from api.filters import ActionItemFilterSerializer, order_by
from api.permissions import StaffOnly
from incidents import services
from incidents.models import ActionItem

# --- Staff-only: action items --------------------------------------------------------------------


class ActionItemEditSerializer(s.StrictSerializer):
    """ActionItem.FIELDS, each optional and without a default: send only what changes."""

    title = s.single_line(required=False)
    description = s.text(required=False, allow_blank=True)
    type = serializers.ChoiceField(choices=ActionItem.Type.choices, required=False)
    priority = serializers.ChoiceField(choices=ActionItem.Priority.choices, required=False)
    status = serializers.ChoiceField(choices=ActionItem.Status.choices, required=False)
    owner = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.filter(is_staff=True, is_active=True),
        required=False,
        allow_null=True,
        help_text="A staff username; null for nobody.",
    )
    due_date = serializers.DateField(required=False, allow_null=True)
    # The create input's field as it is (optional, no default, the same URI schemes).
    tracker_url = copy.deepcopy(s.ActionItemCreateSerializer._declared_fields["tracker_url"])
    is_public = serializers.BooleanField(required=False, help_text="Listed on the published report.")
    reason = s.text(
        required=False,
        allow_blank=True,
        help_text="Why the item will not be done: required when `status` becomes `wont_do`.",
    )


ITEM_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The action item's id.")
CLOSED = [(v, label) for v, label in ActionItem.Status.choices if v not in ActionItem.OPEN_STATUSES]


class ActionItemCloseSerializer(s.StrictSerializer):
    status = serializers.ChoiceField(
        choices=CLOSED, default=ActionItem.Status.DONE, help_text="`done` (default) or `wont_do`."
    )
    reason = s.text(required=False, allow_blank=True, help_text="Why: required with `wont_do`.")


@extend_schema_view(
    list=extend_schema(
        summary="List action items (staff)",
        parameters=[ActionItemFilterSerializer],
        responses={200: s.ActionItemSerializer(many=True), **errors(400, 404, *STAFF_READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get an action item (staff)",
        parameters=[ITEM_ID],
        responses={200: s.ActionItemSerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create an action item (staff)",
        request=s.ActionItemCreateSerializer,
        responses={201: s.ActionItemSerializer, **errors(*WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Change an action item (staff)",
        parameters=[ITEM_ID],
        description="Send only what changes. Send the item's `ETag` (from a GET) as `If-Match` "
        "to refuse the write with 412 if it changed since.",
        request=ActionItemEditSerializer,
        responses={200: s.ActionItemSerializer, **errors(*EDIT_ERRORS)},
    ),
)
class ActionItemViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = s.ActionItemSerializer
    query_serializers = {"list": ActionItemFilterSerializer}
    queryset = ActionItem.objects.select_related("incident", "owner")
    lookup_value_regex = "[0-9]+"  # an id: the schema types it as an integer
    http_method_names = ["get", "post", "patch", "head", "options"]

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
        item = services.action_item_create(**serializer.validated_data, actor=acting_user(request))
        return self.created(item, self.get_serializer(item).data)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        item = self.get_object()
        serializer = ActionItemEditSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        reason = changes.pop("reason", "")
        item = services.action_item_edit(
            item=item, changes=changes, actor=acting_user(request), reason=reason
        )
        return Response(self.fresh(item))

    @extend_schema(
        summary="Close an action item (staff)",
        description="Marks it `done` (or `wont_do`); closing it again with the same status changes nothing.",
        parameters=[ITEM_ID],
        request=ActionItemCloseSerializer,
        responses={200: s.ActionItemSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def close(self, request: Request, pk: str) -> Response:
        item = self.get_object()
        serializer = ActionItemCloseSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        changes = {"status": serializer.validated_data["status"]}
        reason = serializer.validated_data.get("reason", "")
        item = services.action_item_edit(
            item=item, changes=changes, actor=acting_user(request), reason=reason
        )
        return Response(self.fresh(item))
