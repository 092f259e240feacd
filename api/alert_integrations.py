"""Staff API for alert intake's configuration: integrations (create, showing the intake
secret once; update; rotate the secret; delete) and their mapping rules (CRUD).

Writes go through `alerts.services` with the `alerts.manage` permission, as the admin's
do. The secret is never read back: only the create and rotate answers carry it. An
integration that has received alerts is not deleted (409: deactivate it instead). The
default rule cannot be deleted (400, as in the admin): every alert needs somewhere to go.
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from alerts import services
from alerts.models import Integration, MappingRule
from api.base import (
    STAFF_EDIT_ERRORS,
    STAFF_ERRORS,
    STAFF_WRITE_ERRORS,
    CrudViewSet,
    acting_user,
    errors,
)
from api.conflicts import delete_errors, refused_when_in_use
from api.filters import StrictQuery
from api.permissions import StaffOnly
from api.serializers import StrictSerializer, single_line
from incidents.models import ImpactLevel, IncidentImpact, Location, Product

INT4 = 2**31 - 1


# What the services take (alerts.services.rules): label names, values of one line, and a
# comma-separated list of label names. Said here too so that the schema carries them.
LABEL_NAME = r"[A-Za-z_][A-Za-z0-9_.-]{0,99}"
ONE_LINE_PATTERN = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"
ONE_LINE = RegexValidator(ONE_LINE_PATTERN, "One line of text.", code="invalid")
LOCATION_LABELS = RegexValidator(
    rf"^ *(?:{LABEL_NAME})?(?: *, *(?:{LABEL_NAME})?)* *$",
    "Label names separated by commas, e.g. zone,region.",
    code="invalid",
)


@extend_schema_field(
    {
        "type": "object",
        "propertyNames": {"pattern": f"^{LABEL_NAME}$"},
        "additionalProperties": {"type": "string", "maxLength": 200, "pattern": ONE_LINE_PATTERN},
    }
)
class MatchersField(serializers.DictField):
    """Label name to value; the names' rule is checked by the service (a 400 naming `matchers`)."""


class RuleSerializer(StrictSerializer, serializers.ModelSerializer):
    integration = serializers.PrimaryKeyRelatedField(
        queryset=Integration.objects.all(), help_text="Set on create; a rule does not move."
    )
    matchers = MatchersField(
        child=serializers.CharField(max_length=200, allow_blank=True, validators=[ONE_LINE]),
        required=False,
        help_text='Labels that must all be equal, e.g. {"service": "storage"}. Empty for the default rule.',
    )
    product = serializers.SlugRelatedField(slug_field="slug", queryset=Product.objects.all())
    location = serializers.SlugRelatedField(
        slug_field="name", queryset=Location.objects.all(), required=False, allow_null=True
    )
    location_labels = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        validators=[LOCATION_LABELS],
        help_text="Labels whose value names a location, most specific first (e.g. zone,region).",
    )
    level = serializers.ChoiceField(choices=ImpactLevel.choices, required=False)
    impact = serializers.ChoiceField(choices=IncidentImpact.choices, required=False)

    class Meta:
        model = MappingRule
        fields = [
            "id",
            "integration",
            "position",
            "is_default",
            "matchers",
            "product",
            "location",
            "location_labels",
            "level",
            "impact",
            "auto_publish_after_minutes",
        ]
        read_only_fields = ["id"]
        extra_kwargs = {
            "position": {"max_value": INT4},
            "auto_publish_after_minutes": {"max_value": INT4},
        }


class IntegrationSerializer(serializers.ModelSerializer):
    intake_url = serializers.SerializerMethodField(help_text="Where the sender posts its alerts.")
    rules = RuleSerializer(many=True, read_only=True)

    class Meta:
        model = Integration
        fields = [
            "id",
            "name",
            "kind",
            "is_active",
            "flap_debounce_seconds",
            "reopen_within_minutes",
            "intake_url",
            "rules",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_intake_url(self, obj: Integration) -> str:
        return reverse("api-alert-intake", kwargs={"integration_id": obj.pk})


class IssuedIntegrationSerializer(IntegrationSerializer):
    secret = serializers.CharField(
        source="issued_secret",
        help_text="Shown in this answer only. Alertmanager and Grafana send it as `Authorization: "
        "Bearer <secret>`; the generic kind signs with it (HMAC-SHA256).",
    )

    class Meta(IntegrationSerializer.Meta):
        fields = [*IntegrationSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class IntegrationCreateSerializer(StrictSerializer):
    name = single_line(max_length=100, help_text="Unique.")
    kind = serializers.ChoiceField(choices=Integration.Kind.choices)
    default_product = serializers.SlugRelatedField(
        slug_field="slug", queryset=Product.objects.all(), help_text="Where the default rule maps alerts."
    )
    default_level = serializers.ChoiceField(choices=ImpactLevel.choices, default=ImpactLevel.PARTIAL_OUTAGE)
    default_impact = serializers.ChoiceField(choices=IncidentImpact.choices, default=IncidentImpact.MINOR)
    flap_debounce_seconds = serializers.IntegerField(min_value=0, max_value=INT4, default=300)
    reopen_within_minutes = serializers.IntegerField(min_value=0, max_value=INT4, default=24 * 60)
    is_active = serializers.BooleanField(default=True)


class IntegrationUpdateSerializer(StrictSerializer):
    name = single_line(max_length=100, required=False)
    is_active = serializers.BooleanField(required=False, help_text="False stops its intake (401).")
    flap_debounce_seconds = serializers.IntegerField(min_value=0, max_value=INT4, required=False)
    reopen_within_minutes = serializers.IntegerField(min_value=0, max_value=INT4, required=False)


class RuleFilter(StrictQuery):
    integration = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)


@extend_schema_view(
    list=extend_schema(
        summary="List alert integrations (staff)",
        responses={200: IntegrationSerializer(many=True), **errors(*STAFF_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="An alert integration (staff)",
        responses={200: IntegrationSerializer, **errors(*STAFF_ERRORS)},
    ),
    create=extend_schema(
        summary="Create an alert integration (staff)",
        description="Needs `alerts.manage`. Makes its default rule and a fresh secret, shown once in "
        "`secret`.",
        request=IntegrationCreateSerializer,
        responses={201: IssuedIntegrationSerializer, **errors(*STAFF_WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Update an alert integration (staff)",
        description="Needs `alerts.manage`. Send its `ETag` as `If-Match` to refuse the write (412) if "
        "it changed since you read it.",
        request=IntegrationUpdateSerializer,
        responses={200: IntegrationSerializer, **errors(*STAFF_EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete an alert integration and its rules (staff)",
        description="Needs `alerts.manage`. One that has received alerts is not deleted (409): set "
        "`is_active` to false instead.",
        responses={204: None, **delete_errors("The integration has received alerts.")},
    ),
)
class AlertIntegrationViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = IntegrationSerializer

    def get_queryset(self) -> QuerySet[Integration]:
        return Integration.objects.prefetch_related("rules__product", "rules__location").order_by(
            "name", "id"
        )

    def current_representation(self) -> Any:
        return IntegrationSerializer(self.get_object()).data

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = IntegrationCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        integration = services.integration_create(actor=acting_user(request), **serializer.validated_data)
        return self.created(integration, self._issued(integration))

    def _issued(self, integration: Integration) -> Any:
        shown = self.get_queryset().get(pk=integration.pk)
        shown.issued_secret = integration.issued_secret
        return IssuedIntegrationSerializer(shown).data

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        integration = self.get_object()
        serializer = IntegrationUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.integration_update(
            integration=integration, changes=dict(serializer.validated_data), actor=acting_user(request)
        )
        return Response(IntegrationSerializer(self.get_queryset().get(pk=integration.pk)).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        with refused_when_in_use():
            services.integration_delete(integration=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Rotate an integration's secret (staff)",
        description="Needs `alerts.manage`. The new secret is shown once in `secret`; the old one stops "
        "working at once.",
        request=None,
        responses={200: IssuedIntegrationSerializer, **errors(*STAFF_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, pk: str | None = None) -> Response:
        integration = services.integration_rotate_secret(
            integration=self.get_object(), actor=acting_user(request)
        )
        return Response(self._issued(integration))


@extend_schema_view(
    list=extend_schema(
        summary="List alert mapping rules (staff)",
        parameters=[RuleFilter],
        responses={200: RuleSerializer(many=True), **errors(*STAFF_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="An alert mapping rule (staff)", responses={200: RuleSerializer, **errors(*STAFF_ERRORS)}
    ),
    create=extend_schema(
        summary="Add a mapping rule to an integration (staff)",
        description="Needs `alerts.manage`. The first matching rule (by `position`) wins; the default "
        "rule (one per integration) catches the rest.",
        responses={201: RuleSerializer, **errors(*STAFF_WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Update a mapping rule (staff)",
        description="Needs `alerts.manage`; `integration` cannot change. Send its `ETag` as `If-Match` "
        "to refuse the write (412) if it changed since you read it.",
        responses={200: RuleSerializer, **errors(*STAFF_EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete a mapping rule (staff)",
        description="Needs `alerts.manage`. The default rule cannot be deleted (400).",
        responses={204: None, **errors(400, 401, 403, 404, 412, 429, 503)},
    ),
)
class AlertRuleViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = RuleSerializer
    query_serializers = {"list": RuleFilter}

    def get_queryset(self) -> QuerySet[MappingRule]:
        return MappingRule.objects.select_related("integration", "product", "location").order_by(
            "integration__name", "-is_default", "position", "id"
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = self.validated_query(RuleFilter)
        queryset = self.get_queryset()
        if params.get("integration"):
            queryset = queryset.filter(integration_id=params["integration"])
        page = self.paginate_queryset(queryset)
        assert page is not None
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        rule = services.rule_save(actor=acting_user(request), **serializer.validated_data)
        return self.created(rule, self.fresh(rule))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rule = self.get_object()
        serializer = self.get_serializer(rule, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        if "integration" in changes and changes["integration"].pk != rule.integration_id:
            raise serializers.ValidationError(
                {"integration": ["A rule does not move to another integration."]}
            )
        current = {name: getattr(rule, name) for name in RULE_EDITABLE}
        current.update({k: v for k, v in changes.items() if k in RULE_EDITABLE})
        services.rule_save(integration=rule.integration, rule=rule, actor=acting_user(request), **current)
        return Response(self.fresh(rule))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.rule_delete(rule=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


# What `rule_save` takes of a rule besides its integration (an update passes them all).
RULE_EDITABLE = (
    "position",
    "is_default",
    "matchers",
    "product",
    "location",
    "location_labels",
    "level",
    "impact",
    "auto_publish_after_minutes",
)
