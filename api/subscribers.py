"""Staff API for subscribers: who is told about what (read; staff may set the language).

Registered on the v1 router by `register(router)` (see api/urls.py). Staff
only: 401 without a token, 403 for non-staff. Subscribing and unsubscribing stay with
the subscribers themselves (double opt-in, signed links); tokens and webhook secrets are
never part of the API's answers. The one write is the language of a subscriber's emails
(PATCH `{"language": "fr"}`), for staff answering "can I have these in French?".
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from api.base import EDIT_ERRORS, STAFF_READ_ERRORS, APIMixin, errors
from api.permissions import StaffOnly
from api.serializers import StrictSerializer
from core.i18n import LANGUAGE_CHOICES
from subscriptions import services
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
            "language",
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


class SubscriberLanguageSerializer(StrictSerializer):
    language = serializers.ChoiceField(
        choices=LANGUAGE_CHOICES, help_text="The language of the subscriber's emails."
    )


class SubscriberFilterSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SubscriberKind.choices, required=False)
    language = serializers.ChoiceField(choices=LANGUAGE_CHOICES, required=False)
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
    partial_update=extend_schema(
        summary="Set a subscriber's email language (staff)",
        request=SubscriberLanguageSerializer,
        responses={200: SubscriberSerializer, **errors(*EDIT_ERRORS)},
    ),
)
class SubscriberViewSet(
    APIMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    permission_classes = [StaffOnly]
    serializer_class = SubscriberSerializer
    query_serializers = {"list": SubscriberFilterSerializer}
    queryset = Subscriber.objects.prefetch_related("products").order_by("-created_at", "-id")
    http_method_names = ["get", "patch", "head", "options"]

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        subscriber = self.get_object()
        serializer = SubscriberLanguageSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.subscriber_set_language(
            subscriber=subscriber,
            language=serializer.validated_data["language"],
            actor=request.user,  # type: ignore[arg-type]  # StaffOnly: a signed-in user
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=subscriber.pk)).data)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = self.validated_query(SubscriberFilterSerializer)
        queryset = self.get_queryset()
        if params.get("kind"):
            queryset = queryset.filter(kind=params["kind"])
        if params.get("language"):
            queryset = queryset.filter(language=params["language"])
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
