"""Staff API for SLA customers and their entitlements: list, read, create, update, delete,
a monthly statement, and entitlements added or removed one at a time. Writes go through
`credits.services` with the `customer.write` permission, as the admin's do; a customer
with credit notices is not deleted (409: set `sla_eligible` false instead).
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from django.db.models import Prefetch, QuerySet
from django.http import Http404, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import (
    STAFF_EDIT_ERRORS,
    STAFF_ERRORS,
    STAFF_WRITE_ERRORS,
    CrudViewSet,
    acting_user,
    errors,
)
from api.conflicts import delete_errors, refused_when_in_use
from api.credits import PERIOD_PATTERN, StatementQuerySerializer, StatementSerializer
from api.permissions import StaffOnly
from api.serializers import SINGLE_LINE, StrictSerializer, single_line
from credits import exports, services, sla
from credits import selectors as credit_selectors
from credits.models import Customer, CustomerEntitlement, SLAPolicy
from incidents.models import Location, Product

# outbox.clean_addresses takes plain addresses only: none of the characters of a display
# name or a list, which Django's email check would let through in a local part.
PLAIN_ADDRESS = RegexValidator(r"^[^,;<>\"'() ]+$", "A plain email address.", code="invalid")


class EntitlementSerializer(StrictSerializer):
    id = serializers.IntegerField(read_only=True)
    product = serializers.SlugRelatedField(slug_field="slug", queryset=Product.objects.all())
    location = serializers.SlugRelatedField(
        slug_field="name", queryset=Location.objects.all(), required=False, allow_null=True
    )
    policy = serializers.PrimaryKeyRelatedField(
        queryset=SLAPolicy.objects.all(), required=False, allow_null=True
    )


class CustomerSerializer(StrictSerializer, serializers.ModelSerializer):
    name = single_line(max_length=200)
    billing_emails = serializers.ListField(
        child=serializers.EmailField(max_length=254, validators=[PLAIN_ADDRESS]), min_length=1, max_length=50
    )
    currency = serializers.CharField(
        max_length=3, validators=[SINGLE_LINE], required=False, help_text="Stored in capitals."
    )
    entitlements = EntitlementSerializer(
        many=True,
        required=False,
        help_text="On create, the customer's entitlements. On update, entitlements to add (or to "
        "give another policy); remove one with DELETE .../entitlements/{entitlement_id}/.",
    )

    class Meta:
        model = Customer
        fields = ["id", *services.CUSTOMER_FIELDS, "entitlements"]
        read_only_fields = ["id"]


ENTITLEMENT_ID = OpenApiParameter("entitlement_id", int, OpenApiParameter.PATH)


@extend_schema_view(
    list=extend_schema(
        summary="List customers (staff)",
        responses={200: CustomerSerializer(many=True), **errors(*STAFF_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="A customer (staff)", responses={200: CustomerSerializer, **errors(*STAFF_ERRORS)}
    ),
    create=extend_schema(
        summary="Create a customer (staff)",
        responses={201: CustomerSerializer, **errors(*STAFF_WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Update a customer (staff)",
        description="Changes the fields given; needs `customer.write`. Send the customer's `ETag` "
        "as `If-Match` to refuse the write (412) if it changed since you read it.",
        responses={200: CustomerSerializer, **errors(*STAFF_EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete a customer and its entitlements (staff)",
        description="Needs `customer.write`. A customer with credit notices is not deleted (409): "
        "set `sla_eligible` to false to stop computing its credits and keep its history.",
        responses={204: None, **delete_errors("The customer has credit notices.")},
    ),
)
class CustomerViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = CustomerSerializer
    query_serializers = {"statement": StatementQuerySerializer}

    def get_queryset(self) -> QuerySet[Customer]:
        return Customer.objects.prefetch_related(
            Prefetch(
                "entitlements", queryset=CustomerEntitlement.objects.select_related("product", "location")
            )
        ).order_by("name", "id")

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        if self.action == "entitlements":
            return EntitlementSerializer
        return CustomerSerializer

    def current_representation(self) -> Any:
        # An entitlement is part of its customer: If-Match on removing one is the customer's ETag.
        return CustomerSerializer(self.get_object()).data

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        customer = services.customer_create(actor=acting_user(request), **serializer.validated_data)
        return self.created(customer, self.fresh(customer))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        customer = self.get_object()
        serializer = self.get_serializer(customer, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        services.customer_update(customer=customer, actor=acting_user(request), **serializer.validated_data)
        return Response(self.fresh(customer))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        with refused_when_in_use():
            services.customer_delete(customer=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Entitle a customer to a product (staff)",
        description="Needs `customer.write`. The same product and location again changes only its policy.",
        request=EntitlementSerializer,
        responses={201: EntitlementSerializer, **errors(*STAFF_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="entitlements")
    def entitlements(self, request: Request, pk: str | None = None) -> Response:
        customer = self.get_object()
        serializer = EntitlementSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        entitlement = services.customer_entitle(
            customer=customer, actor=acting_user(request), **serializer.validated_data
        )
        return Response(EntitlementSerializer(entitlement).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Remove a customer's entitlement (staff)",
        description="Needs `customer.write`. `If-Match` takes the customer's `ETag`.",
        parameters=[ENTITLEMENT_ID],
        request=None,
        responses={204: None, **errors(400, 401, 403, 404, 412, 429, 503)},
    )
    @action(detail=True, methods=["delete"], url_path=r"entitlements/(?P<entitlement_id>[0-9]+)")
    def entitlement_remove(
        self, request: Request, pk: str | None = None, entitlement_id: str = ""
    ) -> Response:
        customer = self.get_object()
        entitlement = CustomerEntitlement.objects.filter(customer=customer, pk=int(entitlement_id)).first()
        if entitlement is None:
            raise Http404("No such entitlement.")
        services.customer_unentitle(entitlement=entitlement, actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="A customer's monthly SLA statement (staff)",
        description="Uptime per entitled product and location, and the month's credits. "
        "`output=csv` answers text/csv.",
        parameters=[
            OpenApiParameter("period", str, required=True, pattern=PERIOD_PATTERN),
            OpenApiParameter("output", str, enum=["json", "csv"], required=False),
        ],
        responses={200: StatementSerializer, (200, "text/csv"): str, **errors(*STAFF_ERRORS)},
    )
    @action(detail=True, methods=["get"], url_path="statement")
    def statement(self, request: Request, pk: str | None = None) -> Response | HttpResponse:
        params = self.validated_query(StatementQuerySerializer)
        credit_selectors.statements_readable(actor=acting_user(request))
        st = exports.statement(self.get_object(), sla.Period.parse(params["period"]))
        if params["output"] == "csv":
            response = HttpResponse(exports.statement_csv(st), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="sla-statement-{pk}-{st.period}.csv"'
            return response
        return Response(StatementSerializer(st).data)
