"""Staff API for SLA policies and their credit tiers: list, read, create, update (terms
and, when given, the tiers as a whole), delete. Writes go through `credits.services`
with the `policy.write` permission, as the admin's do; a policy that customers,
entitlements or credit notices refer to is not deleted (409).
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Any
from zoneinfo import available_timezones

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers, status
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
from api.permissions import StaffOnly
from api.serializers import StrictSerializer, single_line, text
from credits import services
from credits.models import POLICY_EPOCH, CreditTier, DowntimeSource, SLAPolicy, SLAPolicyVersion

# IANA zone names, less the POSIX-style offsets (`Etc/GMT+5` is UTC-5, `GMT-0`, `GMT+0`):
# their signs are the reverse of what they read as, and as enum members they collide with
# each other (GMT+0, GMT-0 and GMT0 are one name once the sign is dropped).
API_TIME_ZONES = sorted(zone for zone in available_timezones() if not re.search(r"[+-][0-9]", zone))


class TierSerializer(StrictSerializer, serializers.ModelSerializer):
    class Meta:
        model = CreditTier
        fields = ["below", "credit"]


class VersionTierSerializer(serializers.Serializer):
    below = serializers.DecimalField(max_digits=6, decimal_places=3, read_only=True)
    credit = serializers.DecimalField(max_digits=8, decimal_places=2, read_only=True)


class VersionTermsSerializer(serializers.Serializer):
    """The terms a version holds (the rest of a policy does not change from a date)."""

    target = serializers.DecimalField(max_digits=6, decimal_places=3, read_only=True)
    cap = serializers.DecimalField(max_digits=8, decimal_places=2, read_only=True, allow_null=True)
    min_downtime_minutes = serializers.IntegerField(read_only=True)
    exclude_maintenance = serializers.BooleanField(read_only=True)
    weight_major_outage = serializers.DecimalField(max_digits=4, decimal_places=3, read_only=True)
    weight_partial_outage = serializers.DecimalField(max_digits=4, decimal_places=3, read_only=True)
    weight_degraded_performance = serializers.DecimalField(max_digits=4, decimal_places=3, read_only=True)
    weight_under_maintenance = serializers.DecimalField(max_digits=4, decimal_places=3, read_only=True)
    downtime_source = serializers.ChoiceField(choices=DowntimeSource.choices, read_only=True)
    measured_period_minutes = serializers.IntegerField(read_only=True)
    measured_down_above = serializers.DecimalField(max_digits=6, decimal_places=3, read_only=True)
    measured_degraded_above = serializers.DecimalField(
        max_digits=6, decimal_places=3, read_only=True, allow_null=True
    )
    measured_degraded_weight = serializers.DecimalField(max_digits=4, decimal_places=3, read_only=True)
    measured_min_periods = serializers.IntegerField(read_only=True)


class PolicyVersionSerializer(serializers.ModelSerializer):
    terms = VersionTermsSerializer(read_only=True)
    tiers = serializers.SerializerMethodField()

    class Meta:
        model = SLAPolicyVersion
        fields = ["effective_from", "terms", "tiers", "created_at", "created_by"]
        read_only_fields = fields

    @extend_schema_field(VersionTierSerializer(many=True))
    def get_tiers(self, version: SLAPolicyVersion) -> list[dict[str, str]]:
        return [{"below": below, "credit": credit} for below, credit in version.tiers]


class SLAPolicySerializer(StrictSerializer, serializers.ModelSerializer):
    name = single_line(max_length=100, help_text="Unique.")
    description = text(required=False, allow_blank=True)
    time_zone = serializers.ChoiceField(
        choices=API_TIME_ZONES,
        default="US/Pacific",
        help_text="Calendar months are measured in this time zone.",
    )
    tiers = TierSerializer(
        many=True,
        help_text="At most one tier per `below` threshold. On update, the list given replaces the tiers.",
    )
    effective_from = serializers.SerializerMethodField(
        help_text="The day (in the policy's time zone) its newest terms, those shown here, apply from."
    )
    versions = PolicyVersionSerializer(
        many=True,
        read_only=True,
        help_text="The policy's terms over time, oldest first: each version rules from its day until the "
        "next one's. The first reads from 1970-01-01. Editing the terms here amends the newest version; "
        "a change from a date is made in the console.",
    )

    class Meta:
        model = SLAPolicy
        fields = ["id", *services.POLICY_FIELDS, "tiers", "effective_from", "versions"]
        read_only_fields = ["id", "effective_from", "versions"]
        # The database refuses a target of 0 (a promise of nothing).
        extra_kwargs = {
            "target": {"min_value": Decimal("0.001")},
            # PositiveIntegerField: an int4 column on PostgreSQL.
            "claim_window_days": {"max_value": 2**31 - 1},
            "min_downtime_minutes": {"max_value": 2**31 - 1},
        }

    @extend_schema_field(OpenApiTypes.DATE)
    def get_effective_from(self, policy: SLAPolicy) -> date:
        versions = list(policy.versions.all())
        return max((v.effective_from for v in versions), default=POLICY_EPOCH)


def _tiers(data: dict[str, Any]) -> list[tuple[Decimal, Decimal]] | None:
    if "tiers" not in data:
        return None
    return [(Decimal(t["below"]), Decimal(t["credit"])) for t in data.pop("tiers")]


@extend_schema_view(
    list=extend_schema(
        summary="List SLA policies (staff)",
        responses={200: SLAPolicySerializer(many=True), **errors(*STAFF_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="An SLA policy (staff)", responses={200: SLAPolicySerializer, **errors(*STAFF_ERRORS)}
    ),
    create=extend_schema(
        summary="Create an SLA policy with its tiers (staff)",
        responses={201: SLAPolicySerializer, **errors(*STAFF_WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Update an SLA policy (staff)",
        description="Changes the fields given; `tiers`, when given, replaces the tiers as a whole. "
        "Needs `policy.write`. Notices already computed keep their figures until the month is "
        "computed again. Send the policy's `ETag` as `If-Match` to refuse the write (412) if it "
        "changed since you read it.",
        responses={200: SLAPolicySerializer, **errors(*STAFF_EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete an SLA policy (staff)",
        description="Needs `policy.write`. A policy that customers, entitlements or credit notices "
        "refer to is not deleted: 409.",
        responses={204: None, **delete_errors("Customers, entitlements or credit notices refer to it.")},
    ),
)
class SLAPolicyViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = SLAPolicySerializer
    queryset = SLAPolicy.objects.prefetch_related("tiers", "versions").order_by("name")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        tiers = _tiers(data) or []
        policy = services.policy_create(
            tiers=tiers, weights=services.policy_weights(data), actor=acting_user(request), **data
        )
        return self.created(policy, self.fresh(policy))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        policy = self.get_object()
        serializer = self.get_serializer(policy, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        tiers = _tiers(changes)
        services.policy_edit(policy=policy, changes=changes, tiers=tiers, actor=acting_user(request))
        return Response(self.fresh(policy))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        with refused_when_in_use():
            services.policy_delete(policy=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
