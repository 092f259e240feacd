"""The v1 catalogue writes: the input of products and locations (whose viewsets are in
api/products.py), product groups, and the 409 a delete answers when history refers to
what it would remove (docs/api.md, "Managing the catalogue")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api import serializers as s
from api.base import (
    EDIT_ERRORS,
    READ_ERRORS,
    WRITE_ERRORS,
    CrudViewSet,
    acting_user,
    errors,
)
from api.conflicts import delete_errors, refused_when_in_use
from api.permissions import ReadPublicWriteStaff, is_staff
from incidents import services
from incidents.models import Location, ProductGroup


def validated(serializer_class: type[Serializer], data: Any, *, partial: bool = False) -> dict[str, Any]:
    serializer = serializer_class(data=data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


IN_USE = (
    "History refers to it (`code: in_use`); the message says what to do instead "
    "(a product with impact windows is archived)."
)


def catalogue_delete_errors() -> dict[int, OpenApiResponse]:
    return delete_errors(IN_USE, EDIT_ERRORS)


# --- Input -----------------------------------------------------------------------------------

POSITION = serializers.IntegerField(
    min_value=0, max_value=2**31 - 1, required=False, help_text="Order on the page (ascending)."
)


class ProductWriteSerializer(s.StrictSerializer):
    """A product's fields; on PATCH send only what changes."""

    name = s.single_line(max_length=100)
    slug = serializers.SlugField(max_length=100, help_text="Its address in URLs, windows and filters.")
    description = s.text(required=False, allow_blank=True, help_text="Markdown.")
    group = serializers.SlugRelatedField(
        slug_field="name",
        queryset=ProductGroup.objects.all(),
        required=False,
        allow_null=True,
        help_text="The group's name; null for none.",
    )
    position = POSITION
    is_public = serializers.BooleanField(required=False, help_text="Default true; false: staff only.")


class ProductGroupSerializer(serializers.ModelSerializer):
    products = serializers.SerializerMethodField(help_text="Its products' slugs, in page order.")

    class Meta:
        model = ProductGroup
        fields = ["id", "name", "position", "products", "created_at"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_products(self, group: ProductGroup) -> list[str]:
        # Non-staff see the public, current products only, as in the product list.
        products = group.products.order_by("position", "name")
        if not self.context.get("is_staff"):
            products = products.filter(is_public=True, archived_at__isnull=True)
        return list(products.values_list("slug", flat=True))


class ProductGroupWriteSerializer(s.StrictSerializer):
    name = s.single_line(max_length=100)
    position = POSITION


class LocationWriteSerializer(s.StrictSerializer):
    name = serializers.SlugField(max_length=64, help_text="e.g. `us-central1` or `us-central1-b`.")
    display_name = s.single_line(max_length=100, required=False, allow_blank=True)
    kind = serializers.ChoiceField(
        choices=Location.Kind.choices, required=False, help_text="Default `region`."
    )
    # Declared fields leave the class (DRF's metaclass), so `parent` shadows nothing.
    parent = serializers.SlugRelatedField(  # type: ignore[assignment]
        slug_field="name",
        queryset=Location.objects.all(),
        required=False,
        allow_null=True,
        help_text="The enclosing location's name; null for none.",
    )


# --- Product groups ------------------------------------------------------------------------

GROUP_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The group's id.")


@extend_schema_view(
    list=extend_schema(
        summary="List product groups",
        responses={200: ProductGroupSerializer(many=True), **errors(400, 404, *READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get a product group",
        parameters=[GROUP_ID],
        responses={200: ProductGroupSerializer, **errors(404, *READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create a product group (staff)",
        request=ProductGroupWriteSerializer,
        responses={201: ProductGroupSerializer, **errors(*WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Change a product group (staff)",
        description="Send only what changes. Send the group's `ETag` as `If-Match` to refuse "
        "the write with 412 if it changed since.",
        parameters=[GROUP_ID],
        request=ProductGroupWriteSerializer,
        responses={200: ProductGroupSerializer, **errors(*EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete a product group (staff)",
        description="Its products stay, ungrouped; nothing in the history refers to a group.",
        parameters=[GROUP_ID],
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
    ),
)
class ProductGroupViewSet(CrudViewSet):
    permission_classes = [ReadPublicWriteStaff]
    serializer_class = ProductGroupSerializer
    lookup_value_regex = "[0-9]+"
    queryset = ProductGroup.objects.order_by("position", "name")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(ProductGroupViewSet, self).list(request, *args, **kwargs))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.cached(lambda: super(ProductGroupViewSet, self).retrieve(request, *args, **kwargs))

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "is_staff": is_staff(self.request)}

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = validated(ProductGroupWriteSerializer, request.data)
        group = services.product_group_create(**data, actor=acting_user(request))
        return self.created(group, self.get_serializer(group).data)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        group = self.get_object()
        changes = validated(ProductGroupWriteSerializer, request.data, partial=True)
        group = services.product_group_edit(group=group, changes=changes, actor=acting_user(request))
        return Response(self.get_serializer(group).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        group = self.get_object()
        with refused_when_in_use():
            services.product_group_delete(group=group, actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


__all__ = [
    "LocationWriteSerializer",
    "ProductGroupSerializer",
    "ProductGroupViewSet",
    "ProductWriteSerializer",
    "catalogue_delete_errors",
    "validated",
]
