"""Query-string filters and ordering, validated like any other input.

A bad value (unknown status, malformed date, ordering on a field that is not on the
list) is a 400 with the usual error body, never a 500 and never silently ignored.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, F, OrderBy, OuterRef, Q, QuerySet
from rest_framework import serializers

from incidents.models import INCIDENT_STATUSES, MAINTENANCE_STATUSES, ActionItem, ImpactWindow, Incident

INCIDENT_ORDERINGS = ["started_at", "-started_at", "updated_at", "-updated_at", "resolved_at", "-resolved_at"]
MAINTENANCE_ORDERINGS = [*INCIDENT_ORDERINGS, "scheduled_for", "-scheduled_for"]
ACTION_ITEM_ORDERINGS = ["due_date", "-due_date", "priority", "-priority", "created_at", "-created_at"]


class StrictQuery(serializers.Serializer):
    """Query filters where an empty value is an error, as the schema says, rather than
    silently the same as leaving the parameter out."""

    def to_internal_value(self, data: Any) -> Any:
        getlist = getattr(data, "getlist", None)
        blank: dict[str, list[str]] = {
            str(name): ["This parameter may not be empty."]
            for name in list(self.fields.keys())
            if name in data and any(v == "" for v in (getlist(name) if getlist else [data[name]]))
        }
        if blank:
            raise serializers.ValidationError(blank)
        return super().to_internal_value(data)


def order_by(queryset: QuerySet[Any], ordering: str) -> QuerySet[Any]:
    """Order on one whitelisted field; empty values last on every database; ties by id."""
    descending = ordering.startswith("-")
    name = ordering.lstrip("-")
    expression: OrderBy = F(name).desc(nulls_last=True) if descending else F(name).asc(nulls_last=True)
    return queryset.order_by(expression, "-id" if descending else "id")


class _IncidentFilterBase(StrictQuery):
    product = serializers.CharField(
        required=False,
        max_length=100,
        help_text="Only incidents with impact on this product (its slug or its id).",
    )
    impact = serializers.MultipleChoiceField(
        choices=Incident.Impact.choices, required=False, help_text="Repeat to match any of several."
    )
    started_after = serializers.DateTimeField(
        required=False, help_text="Only incidents that started at or after this time (ISO 8601)."
    )
    # A `started_before` earlier than `started_after` is a range nothing falls in: an
    # empty page, as for any other filter that matches nothing, not a 400.
    started_before = serializers.DateTimeField(
        required=False, help_text="Only incidents that started before this time (ISO 8601)."
    )


class IncidentFilterSerializer(_IncidentFilterBase):
    status = serializers.MultipleChoiceField(
        choices=[(s.value, s.label) for s in INCIDENT_STATUSES],
        required=False,
        help_text="Repeat to match any of several.",
    )
    ordering = serializers.ChoiceField(choices=INCIDENT_ORDERINGS, required=False, default="-started_at")


class MaintenanceFilterSerializer(_IncidentFilterBase):
    status = serializers.MultipleChoiceField(
        choices=[(s.value, s.label) for s in MAINTENANCE_STATUSES],
        required=False,
        help_text="Repeat to match any of several.",
    )
    ordering = serializers.ChoiceField(
        choices=MAINTENANCE_ORDERINGS, required=False, default="-scheduled_for"
    )


class ActionItemFilterSerializer(StrictQuery):
    incident = serializers.CharField(required=False, max_length=12, help_text="Incident id.")
    status = serializers.MultipleChoiceField(choices=ActionItem.Status.choices, required=False)
    ordering = serializers.ChoiceField(choices=ACTION_ITEM_ORDERINGS, required=False, default="due_date")


def filter_incidents(
    queryset: QuerySet[Incident], params: dict[str, Any], *, staff: bool
) -> QuerySet[Incident]:
    if params.get("product"):
        product = params["product"]
        windows = ImpactWindow.objects.filter(
            Q(product__slug=product) | Q(product__public_id=product), incident=OuterRef("pk")
        )
        if not staff:
            # Filtering on a staff-only product must not reveal which incidents touch it.
            windows = windows.filter(product__is_public=True)
        queryset = queryset.filter(Exists(windows))
    if params.get("status"):
        queryset = queryset.filter(status__in=sorted(params["status"]))
    if params.get("impact"):
        queryset = queryset.filter(impact__in=sorted(params["impact"]))
    if params.get("started_after") is not None:
        queryset = queryset.filter(started_at__gte=params["started_after"])
    if params.get("started_before") is not None:
        queryset = queryset.filter(started_at__lt=params["started_before"])
    return order_by(queryset, params["ordering"])
