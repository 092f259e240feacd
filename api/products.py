"""The v1 resources of the catalogue: the overall status, products and locations."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import serializers as s
from api.base import READ_ERRORS, APIMixin, errors
from api.permissions import ReadPublicWriteStaff, is_staff
from incidents import selectors
from incidents.models import Location, Product

# --- Overall status ----------------------------------------------------------------------------


class OverallStatusView(APIMixin, APIView):
    permission_classes = [ReadPublicWriteStaff]

    @extend_schema(
        summary="Overall status",
        description="The page indicator (Statuspage rules) and each public product's current status.",
        responses={200: s.OverallStatusSerializer, **errors(*READ_ERRORS)},
        tags=["status"],
    )
    def get(self, request: Request) -> Response:
        return self.cached(self._build)

    def _build(self) -> Response:
        summary = selectors.status_summary(now=timezone.now())
        data = {
            "indicator": summary.banner.indicator,
            "description": summary.banner.description,
            "active_incidents": len(summary.unresolved_impacts),
            "active_maintenance": selectors.maintenance_active_public().count(),
            "products": [
                {"id": p.public_id, "slug": p.slug, "name": p.name, "status": summary.statuses[p.pk]}
                for p in summary.products
            ],
        }
        return Response(data)


# --- Products and locations ---------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List products",
        description="Public products for everyone; staff tokens also see staff-only products.",
        responses={200: s.ProductSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a product",
        description="By slug (`gmail`) or by id; both name the same product.",
        parameters=[
            OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The product's slug or id.")
        ],
        responses={200: s.ProductSerializer, **errors(404, *READ_ERRORS)},
    ),
)
class ProductViewSet(APIMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.ProductSerializer
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet[Product]:
        if is_staff(self.request):
            return Product.objects.select_related("group").order_by(
                "group__position", "group__name", "position", "name"
            )
        return selectors.products_public()

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "statuses": selectors.product_statuses()}

    def get_object(self) -> Product:
        # Addressed by slug (as in windows and filters) or by id (as in the status list).
        value = self.kwargs[self.lookup_field]
        product = get_object_or_404(self.get_queryset(), Q(slug=value) | Q(public_id=value))
        self.check_object_permissions(self.request, product)
        return product

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(ProductViewSet, self).list(request, *args, **kwargs))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(ProductViewSet, self).retrieve(request, *args, **kwargs))


@extend_schema_view(
    list=extend_schema(
        summary="List locations",
        responses={200: s.LocationSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a location",
        parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH, description="The location's name.")],
        responses={200: s.LocationSerializer, **errors(404, *READ_ERRORS)},
    ),
)
class LocationViewSet(APIMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.LocationSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    queryset = Location.objects.select_related("parent").order_by("name")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(LocationViewSet, self).list(request, *args, **kwargs))
