"""The v1 resources of the catalogue: the overall status, products and locations (read by
everyone, written by staff; product groups and the write inputs are in api/catalogue.py)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import serializers as s
from api.base import (
    DETAIL_WRITE_ERRORS,
    EDIT_ERRORS,
    READ_ERRORS,
    WRITE_ERRORS,
    APIMixin,
    CrudViewSet,
    acting_user,
    errors,
)
from api.catalogue import (
    LocationWriteSerializer,
    ProductWriteSerializer,
    catalogue_delete_errors,
    validated,
)
from api.conflicts import refused_when_in_use
from api.permissions import ReadPublicWriteStaff, is_staff
from incidents import selectors, services
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

SLUG_PARAMETER = OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The product's slug or id.")
NAME_PARAMETER = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The location's name.")
IF_MATCH = " Send its `ETag` (from a GET) as `If-Match` to refuse the write with 412 if it changed since."


@extend_schema_view(
    list=extend_schema(
        summary="List products",
        description="Public products for everyone; staff tokens also see staff-only and archived products.",
        responses={200: s.ProductSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a product",
        description="By slug (`gmail`) or by id; both name the same product.",
        parameters=[SLUG_PARAMETER],
        responses={200: s.ProductSerializer, **errors(404, *READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create a product (staff)",
        request=ProductWriteSerializer,
        responses={201: s.ProductSerializer, **errors(*WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Change a product (staff)",
        description="Send only what changes." + IF_MATCH,
        parameters=[SLUG_PARAMETER],
        request=ProductWriteSerializer,
        responses={200: s.ProductSerializer, **errors(*EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete a product (staff)",
        description="Only a product nothing refers to: one with impact windows answers 409, "
        "archive it instead (`POST .../archive/`)." + IF_MATCH,
        parameters=[SLUG_PARAMETER],
        request=None,
        responses={204: None, **catalogue_delete_errors()},
    ),
)
class ProductViewSet(CrudViewSet):
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

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = validated(ProductWriteSerializer, request.data)
        product = services.product_create(**data, actor=acting_user(request))
        return self.created(product, self.fresh(product))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        product = self.get_object()
        changes = validated(ProductWriteSerializer, request.data, partial=True)
        services.product_edit(product=product, changes=changes, actor=acting_user(request))
        return Response(self.fresh(product))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        product = self.get_object()
        with refused_when_in_use():
            services.product_delete(product=product, actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Archive a product (staff)",
        description="Retires it: it leaves the status page and takes no new impact, while the "
        "incidents that had impact on it keep their history. Refused while it has open impact.",
        parameters=[SLUG_PARAMETER],
        request=None,
        responses={200: s.ProductSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, slug: str) -> Response:
        product = services.product_archive(product=self.get_object(), actor=acting_user(request))
        return Response(self.fresh(product))

    @extend_schema(
        summary="Restore an archived product (staff)",
        description="Back on the status page (if public), open to impact again.",
        parameters=[SLUG_PARAMETER],
        request=None,
        responses={200: s.ProductSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"])
    def restore(self, request: Request, slug: str) -> Response:
        product = services.product_archive(
            product=self.get_object(), archived=False, actor=acting_user(request)
        )
        return Response(self.fresh(product))


@extend_schema_view(
    list=extend_schema(
        summary="List locations",
        responses={200: s.LocationSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a location",
        parameters=[NAME_PARAMETER],
        responses={200: s.LocationSerializer, **errors(404, *READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create a location (staff)",
        request=LocationWriteSerializer,
        responses={201: s.LocationSerializer, **errors(*WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Change a location (staff)",
        description="Send only what changes; a location cannot move inside itself." + IF_MATCH,
        parameters=[NAME_PARAMETER],
        request=LocationWriteSerializer,
        responses={200: s.LocationSerializer, **errors(*EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete a location (staff)",
        description="Only a location nothing refers to: impact windows or locations inside it "
        "answer 409." + IF_MATCH,
        parameters=[NAME_PARAMETER],
        request=None,
        responses={204: None, **catalogue_delete_errors()},
    ),
)
class LocationViewSet(CrudViewSet):
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = s.LocationSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    queryset = Location.objects.select_related("parent").order_by("name")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(LocationViewSet, self).list(request, *args, **kwargs))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = validated(LocationWriteSerializer, request.data)
        location = services.location_create(**data, actor=acting_user(request))
        return self.created(location, self.fresh(location))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        location = self.get_object()
        changes = validated(LocationWriteSerializer, request.data, partial=True)
        location = services.location_edit(location=location, changes=changes, actor=acting_user(request))
        return Response(self.fresh(location))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        location = self.get_object()
        with refused_when_in_use():
            services.location_delete(location=location, actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
