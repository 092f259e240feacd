"""The v1 action items (staff only): what incident reports commit the team to do."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.base import STAFF_READ_ERRORS, WRITE_ERRORS, APIMixin, acting_user, errors
from api.filters import ActionItemFilterSerializer, order_by
from api.permissions import StaffOnly
from incidents import services
from incidents.models import ActionItem

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
    query_serializers = {"list": ActionItemFilterSerializer}
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
        item = services.action_item_create(**serializer.validated_data, actor=acting_user(request))
        return Response(
            self.get_serializer(item).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("action-item-detail", args=[item.pk])},
        )
