"""Staff API for subscribers: who is told about what (read only).

Registered on the v1 router by `register(router)` (see api/urls.py). Staff
only: 401 without a token, 403 for non-staff. Subscribing and unsubscribing stay with
the subscribers themselves (double opt-in, signed links); tokens and webhook secrets are
never part of the API's answers.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from api.base import STAFF_READ_ERRORS, APIMixin, errors
from api.permissions import StaffOnly
from subscriptions.models import Subscriber, SubscriberKind


class SubscriberSerializer(serializers.ModelSerializer):
    products: serializers.Field = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    confirmed = serializers.SerializerMethodField()

    class Meta:
        model = Subscriber
        fields = [
            "id",
            "kind",
            "email",
            "url",
            "all_products",
            "products",
            "confirmed",
            "confirmed_at",
            "failure_count",
            "disabled_at",
            "disabled_reason",
            "created_at",
        ]
        read_only_fields = fields

    def get_confirmed(self, subscriber: Subscriber) -> bool:
        return subscriber.confirmed_at is not None


class SubscriberFilterSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SubscriberKind.choices, required=False)
    confirmed = serializers.BooleanField(required=False, allow_null=True, default=None)
    product = serializers.SlugField(required=False, help_text="Subscribers told about this product.")


@extend_schema_view(
    list=extend_schema(
        summary="List subscribers (staff)",
        parameters=[SubscriberFilterSerializer],
        responses={200: SubscriberSerializer(many=True), **errors(400, 404, *STAFF_READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a subscriber (staff)",
        responses={200: SubscriberSerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
)
class SubscriberViewSet(APIMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = [StaffOnly]
    serializer_class = SubscriberSerializer
    query_serializers = {"list": SubscriberFilterSerializer}
    queryset = Subscriber.objects.prefetch_related("products").order_by("-created_at", "-id")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = self.validated_query(SubscriberFilterSerializer)
        queryset = self.get_queryset()
        if params.get("kind"):
            queryset = queryset.filter(kind=params["kind"])
        if params.get("confirmed") is not None:
            queryset = queryset.filter(confirmed_at__isnull=not params["confirmed"])
        if params.get("product"):
            queryset = queryset.filter(all_products=True) | queryset.filter(products__slug=params["product"])
            queryset = queryset.distinct()
        page = self.paginate_queryset(queryset)
        assert page is not None
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


def register(router: BaseRouter) -> None:
    router.register("subscribers", SubscriberViewSet, basename="subscriber")
