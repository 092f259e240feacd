"""v1: a public product's monthly uptime report (the JSON of /products/<slug>/uptime/)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.base import READ_ERRORS, APIMixin, errors
from api.permissions import ReadPublicWriteStaff
from insights import present
from insights import selectors as insights


class _UptimeProductSerializer(serializers.Serializer):
    id = serializers.CharField()
    slug = serializers.CharField()
    name = serializers.CharField()


class _WeightsSerializer(serializers.Serializer):
    major_outage = serializers.CharField()
    partial_outage = serializers.CharField()
    degraded_performance = serializers.CharField()
    under_maintenance = serializers.CharField()


class _LastDaysSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    uptime_percent = serializers.CharField(help_text="Decimal string, rounded down to 0.01.")
    weighted_downtime_minutes = serializers.CharField()
    total_downtime_minutes = serializers.CharField()


class _MonthSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM, in the display time zone.")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    complete = serializers.BooleanField(help_text="False for the current month (measured up to now).")
    measured_minutes = serializers.CharField()
    weighted_downtime_minutes = serializers.CharField()
    total_downtime_minutes = serializers.CharField()
    uptime_percent = serializers.CharField(help_text="Decimal string, rounded down to 0.01.")
    incidents = serializers.IntegerField()


class UptimeReportSerializer(serializers.Serializer):
    product = _UptimeProductSerializer()
    time_zone = serializers.CharField()
    weights = _WeightsSerializer()
    rule = serializers.CharField(help_text="The weighting rule, in words.")
    last_90_days = _LastDaysSerializer()
    months = _MonthSerializer(many=True, help_text="The last 12 months, newest first.")


class ProductUptimeView(APIMixin, APIView):
    permission_classes = [ReadPublicWriteStaff]
    pagination_class = None

    @extend_schema(
        summary="A product's monthly uptime report",
        description=(
            "Monthly uptime of a public product for the last 12 months (the current month up to "
            "now) and over the status page's 90 days, from the same impact windows and weights as "
            "the status page. `rule` states the weighting."
        ),
        parameters=[OpenApiParameter("slug", str, OpenApiParameter.PATH, description="Product slug.")],
        responses={200: UptimeReportSerializer, **errors(404, *READ_ERRORS)},
        tags=["products"],
    )
    def get(self, request: Request, slug: str) -> Response:
        report = insights.product_uptime_report(slug=slug, now=timezone.now())
        return Response(present.uptime_json(report))
