"""Staff API for subscribers: who is told about what, and the staff writes on them.

Registered on the v1 router by `register(router)` (see api/urls.py). Staff only: 401
without a token, 403 for non-staff or a read key writing; the roles are the admin's
(`subscriber.manage` for email, `webhook.manage` for hooks), checked by the same
subscriptions services. Create (a confirmation email by default, or `confirmed: true`
for imports without one), set the email language (PATCH), delete or unsubscribe, and
for a generic webhook send a test event or rotate its secret. Tokens never appear; a
webhook's `whsec_` secret appears once, in the answer that made it (create, rotation).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from api.base import (
    DETAIL_WRITE_ERRORS,
    EDIT_ERRORS,
    STAFF_READ_ERRORS,
    WRITE_ERRORS,
    CrudViewSet,
    acting_user,
    errors,
)
from api.conflicts import conflict_on
from api.permissions import StaffOnly
from api.serializers import ErrorSerializer, StrictSerializer
from core.i18n import LANGUAGE_CHOICES
from incidents.models import Product
from outbox import signing
from subscriptions import notifications, services
from subscriptions.models import PayloadFormat, Subscriber, SubscriberKind


class SubscriberSerializer(serializers.ModelSerializer):
    products: serializers.Field = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    # Not `format: uri`: an email subscriber's is "".
    url = serializers.CharField(read_only=True, help_text="A hook's target URL; empty for email.")
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
            "payload_format",
            "time_zone",
            "failure_count",
            "disabled_at",
            "disabled_reason",
            "created_at",
        ]
        read_only_fields = fields

    def get_confirmed(self, subscriber: Subscriber) -> bool:
        return subscriber.confirmed_at is not None


class SubscriberWithSecretSerializer(SubscriberSerializer):
    """A subscriber with its webhook's signing secret: only in the answer that made it."""

    secret = serializers.SerializerMethodField(
        help_text="A generic webhook's signing secret (`whsec_...`, Standard Webhooks), shown this once; "
        "null for other kinds."
    )

    class Meta(SubscriberSerializer.Meta):
        fields = [*SubscriberSerializer.Meta.fields, "secret"]
        read_only_fields = fields

    def get_secret(self, subscriber: Subscriber) -> str | None:
        return subscriber.standard_secret if subscriber.kind == Subscriber.Kind.WEBHOOK else None


class SubscriberCreateSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=SubscriberKind.choices, default=SubscriberKind.EMAIL)
    email = serializers.EmailField(max_length=254, help_text="The address; for a hook, its owner's.")
    url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="Hooks only: the https target.",
    )
    all_products = serializers.BooleanField(default=True)
    products = serializers.ListField(
        child=serializers.SlugField(),
        required=False,
        default=list,
        help_text="Product slugs (with all_products false).",
    )
    payload_format = serializers.ChoiceField(choices=PayloadFormat.choices, default=PayloadFormat.NATIVE)
    language = serializers.ChoiceField(choices=LANGUAGE_CHOICES, default="en")
    time_zone = serializers.CharField(
        max_length=64,
        required=False,
        allow_blank=True,
        default="",
        help_text="Email only: IANA zone of its times.",
    )
    confirmed = serializers.BooleanField(
        default=False,
        help_text="false (default): a confirmation email is sent and nothing else until it is used. "
        "true: imported confirmed, without any email.",
    )

    def validate_products(self, slugs: list[str]) -> list[Product]:
        found = {p.slug: p for p in Product.objects.filter(slug__in=slugs)}
        unknown = [slug for slug in slugs if slug not in found]
        if unknown:
            raise serializers.ValidationError(f"Unknown product: {', '.join(unknown)}.")
        return [found[slug] for slug in dict.fromkeys(slugs)]


class UnsubscribedSerializer(serializers.Serializer):
    cancelled = serializers.IntegerField(help_text="Queued messages to it that were cancelled.")


class TestEventSerializer(serializers.Serializer):
    event = serializers.CharField(help_text="Always `test`.")
    webhook_id = serializers.CharField(
        help_text="The delivery's `webhook-id` header, to find it at the receiver."
    )


class SubscriberLanguageSerializer(StrictSerializer):
    language = serializers.ChoiceField(
        choices=LANGUAGE_CHOICES, help_text="The language of the subscriber's emails."
    )


class SubscriberFilterSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SubscriberKind.choices, required=False)
    language = serializers.ChoiceField(choices=LANGUAGE_CHOICES, required=False)
    confirmed = serializers.BooleanField(required=False, allow_null=True, default=None)
    product = serializers.SlugField(required=False, help_text="Subscribers told about this product.")


class SubscriberStateConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The subscriber's state does not allow this."
    default_code = "conflict"


def _state_conflicts() -> AbstractContextManager[None]:
    """A write the subscriber's state refuses is a 409 naming why, not a 400."""
    return conflict_on(services.SubscriberConflict, SubscriberStateConflict)


def _conflict(description: str) -> dict[int, OpenApiResponse]:
    return {409: OpenApiResponse(ErrorSerializer, description=description)}


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
    create=extend_schema(
        summary="Add a subscriber (staff)",
        description=(
            "Through the subscribe form's service: a confirmation email goes to the address and "
            "nothing else until its link is used. `confirmed: true` imports it confirmed without "
            "any email. An address (and URL) subscribed already is a 409. A generic "
            "webhook's `whsec_` secret is in this answer only (write key; `subscriber.manage`, or "
            "`webhook.manage` for hooks)."
        ),
        request=SubscriberCreateSerializer,
        responses={
            201: SubscriberWithSecretSerializer,
            **errors(*WRITE_ERRORS),
            **_conflict("Subscribed already (or an Idempotency-Key still in use)."),
        },
    ),
    destroy=extend_schema(
        summary="Delete a subscriber (staff)",
        description="Removes it and cancels what is still queued for it (write key).",
        responses={204: None, **errors(*EDIT_ERRORS)},
    ),
)
class SubscriberViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = SubscriberSerializer
    query_serializers = {"list": SubscriberFilterSerializer}
    queryset = Subscriber.objects.prefetch_related("products").order_by("-created_at", "-id")

    def _detail(self, subscriber: Subscriber, serializer: type[serializers.Serializer]) -> Any:
        return serializer(
            self.get_queryset().get(pk=subscriber.pk), context=self.get_serializer_context()
        ).data

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = SubscriberCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with _state_conflicts():
            subscriber = services.subscriber_staff_create(
                actor=acting_user(request), **serializer.validated_data
            )
        return self.created(subscriber, self._detail(subscriber, SubscriberWithSecretSerializer))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.subscriber_staff_delete(subscriber=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Unsubscribe a subscriber (staff)",
        description=(
            "What the subscriber's own unsubscribe link does, on its behalf: it is removed and what is "
            "queued for it cancelled; answers how many messages were cancelled (write key)."
        ),
        request=None,
        responses={200: UnsubscribedSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def unsubscribe(self, request: Request, pk: str | None = None) -> Response:
        cancelled = services.subscriber_staff_delete(subscriber=self.get_object(), actor=acting_user(request))
        return Response({"cancelled": cancelled})

    @extend_schema(
        summary="Send a test event to a webhook (staff)",
        description=(
            "Queues a signed `test` event to a generic webhook, like the admin's action; a 409 for "
            "another kind or a disabled webhook (write key, `webhook.manage`)."
        ),
        request=None,
        responses={
            202: TestEventSerializer,
            **errors(*DETAIL_WRITE_ERRORS),
            **_conflict("Not a generic webhook, or disabled (or an Idempotency-Key still in use)."),
        },
    )
    @action(detail=True, methods=["post"], url_path="test-event")
    def test_event(self, request: Request, pk: str | None = None) -> Response:
        with _state_conflicts():
            message = notifications.webhook_test_send(
                subscriber=self.get_object(), actor=acting_user(request)
            )
        body = {"event": notifications.TEST_EVENT, "webhook_id": signing.webhook_id(message.idempotency_key)}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Rotate a webhook's signing secret (staff)",
        description=(
            "A new `whsec_` secret, returned in `secret` this once; what is still queued is signed "
            "with it. A secret of the old form moves to Standard Webhooks alone (write key, "
            "`webhook.manage`)."
        ),
        request=None,
        responses={
            200: SubscriberWithSecretSerializer,
            **errors(*DETAIL_WRITE_ERRORS),
            **_conflict("Not a generic webhook (or an Idempotency-Key still in use)."),
        },
    )
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, pk: str | None = None) -> Response:
        with _state_conflicts():
            subscriber = services.subscriber_rotate_secret(
                subscriber=self.get_object(), actor=acting_user(request)
            )
        return Response(self._detail(subscriber, SubscriberWithSecretSerializer))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        subscriber = self.get_object()
        serializer = SubscriberLanguageSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.subscriber_set_language(
            subscriber=subscriber,
            language=serializer.validated_data["language"],
            actor=acting_user(request),
        )
        return Response(self._detail(subscriber, SubscriberSerializer))

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
