"""Staff API for SLA policies and their credit tiers: list, read, create, update (terms
and, when given, the tiers as a whole), delete. Writes go through `credits.services`
with the `policy.write` permission, as the admin's do; a policy that customers,
entitlements or credit notices refer to is not deleted (409).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from zoneinfo import available_timezones

from drf_spectacular.utils import extend_schema, extend_schema_view
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
from credits.models import CreditTier, SLAPolicy

# IANA zone names, less the POSIX-style offsets (`Etc/GMT+5` is UTC-5, `GMT-0`, `GMT+0`):
# their signs are the reverse of what they read as, and as enum members they collide with
# each other (GMT+0, GMT-0 and GMT0 are one name once the sign is dropped).
API_TIME_ZONES = sorted(zone for zone in available_timezones() if not re.search(r"[+-][0-9]", zone))


class TierSerializer(StrictSerializer, serializers.ModelSerializer):
    class Meta:
        model = CreditTier
        fields = ["below", "credit"]


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

    class Meta:
        model = SLAPolicy
        fields = ["id", *services.POLICY_FIELDS, "tiers"]
        read_only_fields = ["id"]
        # The database refuses a target of 0 (a promise of nothing).
        extra_kwargs = {
            "target": {"min_value": Decimal("0.001")},
            # PositiveIntegerField: an int4 column on PostgreSQL.
            "claim_window_days": {"max_value": 2**31 - 1},
            "min_downtime_minutes": {"max_value": 2**31 - 1},
        }


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
    queryset = SLAPolicy.objects.prefetch_related("tiers").order_by("name")

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
