"""Staff API for SLA credits: credit notices (+ compute, approve), and the statement shapes
that api/customers.py serves (customers and SLA policies live in their own modules).

Registered on the v1 router by `register(router)` (see api/urls.py). Every
endpoint is staff-only (401 without a token, 403 for non-staff) and every write goes
through `credits.services`, as the admin does.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from api.base import STAFF_ERRORS, STAFF_WRITE_ERRORS, APIMixin, acting_user, errors
from api.filters import StrictQuery
from api.permissions import StaffOnly
from api.serializers import StrictSerializer
from credits import confirm, exports, services, sla
from credits import selectors as credit_selectors
from credits.models import CreditNotice, NoticeState

# A month as credits.sla.Period takes it: YYYY-MM, years 1970 to 9998. Checked here too so
# that the schema carries it as a `pattern`.
PERIOD_PATTERN = r"^(?:19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-(?:0[1-9]|1[0-2])$"
PERIOD = RegexValidator(
    PERIOD_PATTERN,
    "A month, written YYYY-MM (1970-01 to 9998-12).",
    code="invalid",
)


def period_field(**kwargs: Any) -> serializers.CharField:
    return serializers.CharField(max_length=7, validators=[PERIOD], **kwargs)


# --- Serializers (shape only; rules live in the services) ------------------------------------------


class NoticeSerializer(serializers.ModelSerializer):
    customer_name = serializers.CharField(source="customer.name", read_only=True)
    incidents = serializers.SlugRelatedField(slug_field="public_id", many=True, read_only=True)  # type: ignore[var-annotated]
    message_state = serializers.CharField(
        source="message.state", read_only=True, default=None, allow_null=True
    )
    attempts = serializers.IntegerField(read_only=True)

    class Meta:
        model = CreditNotice
        fields = [
            "id",
            "customer",
            "customer_name",
            "policy",
            "period",
            "period_start",
            "period_end",
            "downtime_minutes",
            "uptime_percent",
            "credit",
            "unit",
            "credit_amount",
            "claim_deadline",
            "incidents",
            "state",
            "email_message_id",
            "message_state",
            "attempts",
            "last_error",
            "computed_at",
            "approved_at",
            "sent_at",
        ]
        read_only_fields = fields


class PeriodSerializer(StrictSerializer):
    period = period_field()

    def validate_period(self, value: str) -> str:
        try:
            return str(sla.Period.parse(value))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


class StatementQuerySerializer(PeriodSerializer):
    output = serializers.ChoiceField(choices=["json", "csv"], required=False, default="json")


class ApproveSerializer(StrictSerializer):
    period = period_field(required=False)
    confirm = serializers.BooleanField(
        default=False,
        help_text="Required (true) unless `confirmation` is given: without it nothing is sent and the "
        "answer is 400. Prefer `confirmation`, which sends exactly what send-preview showed.",
    )
    confirmation = serializers.CharField(
        required=False,
        max_length=20000,
        help_text="The token from POST send-preview. Sends exactly the notices (and figures) it showed; "
        "a notice recomputed or cancelled since makes it stale (400).",
    )
    # Bounded to the id column (bigint): a larger number is a 400, not a database error.
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False, max_length=10000
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("confirmation"):
            return attrs
        if not attrs.get("period") and not attrs.get("ids"):
            raise serializers.ValidationError("Give a period or a list of notice ids.")
        if attrs.get("period"):
            try:
                attrs["period"] = str(sla.Period.parse(attrs["period"]))
            except ValueError as exc:
                raise serializers.ValidationError({"period": str(exc)}) from None
        return attrs


class ComputeResultSerializer(serializers.Serializer):
    period = serializers.CharField()
    customers_considered = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    removed = serializers.IntegerField()
    kept_final = serializers.IntegerField()


class SendResultSerializer(serializers.Serializer):
    queued = serializers.IntegerField()
    retried = serializers.IntegerField()
    skipped = serializers.IntegerField()
    awaiting_approval = serializers.BooleanField(
        help_text="True when this call prepared a send above the four-eyes limit: nothing was sent "
        "until a different Finance user approves the same confirmation."
    )
    prepared_by = serializers.CharField(help_text="Who prepared it (four-eyes sends), else empty.")


class PreviewSerializer(ApproveSerializer):
    confirm = None  # type: ignore[assignment]
    confirmation = None  # type: ignore[assignment]


class PlanNoticeSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    customer = serializers.CharField(source="customer.name")
    credit = serializers.DecimalField(max_digits=8, decimal_places=2)
    unit = serializers.CharField()
    credit_amount = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    currency = serializers.CharField(source="customer.currency")
    recipients = serializers.ListField(source="customer.billing_emails", child=serializers.CharField())


class MoneySerializer(serializers.Serializer):
    currency = serializers.CharField()
    amount = serializers.DecimalField(max_digits=14, decimal_places=2)


class SendPlanSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    days = serializers.DecimalField(max_digits=12, decimal_places=2)
    percent = serializers.DecimalField(max_digits=12, decimal_places=2)
    money = MoneySerializer(many=True)
    recipient_count = serializers.IntegerField()
    notices = PlanNoticeSerializer(many=True)
    confirmation = serializers.CharField(source="token", help_text="Pass to approve to send exactly this.")
    needs_second_approver = serializers.BooleanField(
        help_text="Above CREDITS_SECOND_APPROVER_ABOVE: one Finance user prepares, a different one approves."
    )
    prepared_by = serializers.CharField(source="prepared.prepared_label", default="", allow_blank=True)
    prepared_at = serializers.DateTimeField(source="prepared.prepared_at", default=None, allow_null=True)


class StatementLineSerializer(serializers.Serializer):
    product = serializers.CharField()
    location = serializers.CharField()
    policy = serializers.CharField()
    downtime_minutes = serializers.DecimalField(max_digits=10, decimal_places=2)
    uptime_percent = serializers.DecimalField(max_digits=7, decimal_places=4)


class StatementSerializer(serializers.Serializer):
    customer = serializers.CharField(source="customer.name")
    period = serializers.CharField()
    lines = StatementLineSerializer(many=True)
    notices = NoticeSerializer(many=True)


class NoticeFilterSerializer(StrictQuery):
    period = period_field(required=False, help_text="A month, `YYYY-MM`.")
    state = serializers.ChoiceField(choices=NoticeState.choices, required=False)

    def validate_period(self, value: str) -> str:
        # `period=bogus` is a 400, not an empty page that looks like "no notices".
        try:
            return str(sla.Period.parse(value))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


# --- Views ------------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List credit notices (staff)",
        parameters=[NoticeFilterSerializer],
        responses={200: NoticeSerializer(many=True), **errors(*STAFF_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="A credit notice (staff)", responses={200: NoticeSerializer, **errors(*STAFF_ERRORS)}
    ),
)
class CreditNoticeViewSet(APIMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [StaffOnly]
    serializer_class = NoticeSerializer
    query_serializers = {"list": NoticeFilterSerializer, "export": PeriodSerializer}

    def get_queryset(self) -> QuerySet[CreditNotice]:
        return (
            CreditNotice.objects.select_related("customer", "policy", "message")
            .prefetch_related("incidents")
            .order_by("-period", "customer__name", "id")
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = self.validated_query(NoticeFilterSerializer)
        queryset = self.get_queryset()
        if params.get("period"):
            queryset = queryset.filter(period=params["period"])
        if params.get("state"):
            queryset = queryset.filter(state=params["state"])
        page = self.paginate_queryset(queryset)
        assert page is not None
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        summary="Compute the notices of a month for review (staff)",
        request=PeriodSerializer,
        responses={200: ComputeResultSerializer, **errors(*STAFF_WRITE_ERRORS)},
    )
    @action(detail=False, methods=["post"])
    def compute(self, request: Request) -> Response:
        serializer = PeriodSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        summary = services.credits_compute(
            period=serializer.validated_data["period"], actor=acting_user(request), via="api"
        )
        return Response(ComputeResultSerializer(summary).data)

    @extend_schema(
        summary="What sending would do, and its confirmation token (staff)",
        description="By `ids`, or every computed or failed notice of `period`. Sends nothing. "
        "The answer's `confirmation` goes to approve to send exactly these notices.",
        request=PreviewSerializer,
        responses={200: SendPlanSerializer, **errors(*STAFF_WRITE_ERRORS)},
    )
    @action(detail=False, methods=["post"], url_path="send-preview")
    def send_preview(self, request: Request) -> Response:
        serializer = PreviewSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        ids = credit_selectors.notice_ids_selected(period=data.get("period", ""), ids=data.get("ids") or ())
        plan = confirm.send_preview(ids=ids, actor=acting_user(request), via="api")
        return Response(SendPlanSerializer(plan).data)

    @extend_schema(
        summary="Approve notices and queue their emails (staff; needs confirmation)",
        description="Give `confirmation` (the token from send-preview: sends exactly what it showed), "
        'or `ids`/`period` with `"confirm": true`. Without either, nothing is sent: 400.',
        request=ApproveSerializer,
        responses={200: SendResultSerializer, **errors(*STAFF_WRITE_ERRORS)},
    )
    @action(detail=False, methods=["post"])
    def approve(self, request: Request) -> Response:
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            summary = confirm.credits_send_requested(
                token=data.get("confirmation", ""),
                confirmed=data.get("confirm", False),
                period=data.get("period", ""),
                ids=data.get("ids") or (),
                actor=acting_user(request),
                via="api",
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return Response(SendResultSerializer(summary).data)

    @extend_schema(
        summary="A month's notices as CSV, for finance (staff)",
        parameters=[OpenApiParameter("period", str, required=True, pattern=PERIOD_PATTERN)],
        responses={(200, "text/csv"): str, **errors(*STAFF_ERRORS)},
    )
    @action(detail=False, methods=["get"], url_path="export")
    def export(self, request: Request) -> HttpResponse:
        params = self.validated_query(PeriodSerializer)
        credit_selectors.statements_readable(actor=acting_user(request))
        body = exports.notices_csv(credit_selectors.notices_filtered(period=params["period"]))
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="credit-notices-{params["period"]}.csv"'
        return response

    @extend_schema(
        summary="Cancel a notice before it is sent (staff)",
        request=None,
        responses={200: NoticeSerializer, **errors(*STAFF_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        notice = services.credits_cancel(notice=self.get_object(), actor=acting_user(request), via="api")
        return Response(self.get_serializer(self.get_queryset().get(pk=notice.pk)).data)


def register(router: BaseRouter) -> None:
    # Customers and SLA policies: api/customers.py and api/sla_policies.py.
    router.register("credit-notices", CreditNoticeViewSet, basename="credit-notice")
