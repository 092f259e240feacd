"""The v1 audience pages (staff only): the internal and customer pages beside the public
one, written through the same service as the console's Pages. Their content is read at
/p/<slug>/api/v2/… (audiences.views), by signed-in readers or a page key."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.base import EDIT_ERRORS, STAFF_READ_ERRORS, WRITE_ERRORS, CrudViewSet, acting_user, errors
from api.catalogue import validated
from api.permissions import StaffOnly
from audiences import services
from audiences.models import Page
from audiences.selectors import pages_all
from credits.models import Customer
from incidents.models import Location, Product


class PageSerializer(serializers.ModelSerializer):
    products: serializers.Field = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    locations: serializers.Field = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    customers: serializers.Field = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = Page
        fields = [
            "slug",
            "title",
            "intro",
            "visibility",
            "products",
            "locations",
            "customers",
            "host",
            "allowed_networks",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class PageWriteSerializer(s.StrictSerializer):
    """On PATCH send only what changes."""

    slug = serializers.SlugField(max_length=60)
    title = s.single_line(max_length=120)
    intro = s.text(required=False, help_text="Shown under the title (Markdown).")
    visibility = serializers.ChoiceField(choices=Page.Visibility.choices)
    products = serializers.SlugRelatedField(
        slug_field="slug", many=True, required=False, queryset=Product.objects.all()
    )
    locations = serializers.SlugRelatedField(
        slug_field="name", many=True, required=False, queryset=Location.objects.all()
    )
    customers = serializers.PrimaryKeyRelatedField(many=True, required=False, queryset=Customer.objects.all())
    host = serializers.CharField(
        max_length=253,
        required=False,
        allow_blank=True,
        help_text="A host name that serves this page at / (it must also be in ALLOWED_HOSTS); empty: none.",
    )
    allowed_networks = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=services.MAX_NETWORKS,
        help_text="Address ranges (CIDR) the page answers from; empty: anywhere. A list sent replaces it.",
    )


PAGE_SLUG = OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The page's slug.")
FIELDS = ("slug", "title", "intro", "visibility", "host", "allowed_networks")


@extend_schema_view(
    list=extend_schema(
        summary="List audience pages (staff)",
        responses={200: PageSerializer(many=True), **errors(400, 404, *STAFF_READ_ERRORS)},
    ),
    retrieve=extend_schema(
        summary="Get an audience page (staff)",
        parameters=[PAGE_SLUG],
        responses={200: PageSerializer, **errors(404, *STAFF_READ_ERRORS)},
    ),
    create=extend_schema(
        summary="Create an audience page (staff)",
        request=PageWriteSerializer,
        responses={201: PageSerializer, **errors(*WRITE_ERRORS)},
    ),
    partial_update=extend_schema(
        summary="Change an audience page (staff)",
        description="Send only what changes; a list sent replaces the one it had.",
        parameters=[PAGE_SLUG],
        request=PageWriteSerializer,
        responses={200: PageSerializer, **errors(*EDIT_ERRORS)},
    ),
    destroy=extend_schema(
        summary="Delete an audience page (staff)",
        parameters=[PAGE_SLUG],
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
    ),
)
class PageViewSet(CrudViewSet):
    permission_classes = [StaffOnly]
    serializer_class = PageSerializer
    lookup_field = "slug"
    queryset = pages_all()

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = validated(PageWriteSerializer, request.data)
        page = services.page_save(**data, actor=acting_user(request))
        return self.created(page, self.fresh(page))

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.get_object()
        changes = validated(PageWriteSerializer, request.data, partial=True)
        current: dict[str, Any] = {name: getattr(page, name) for name in FIELDS}
        for name in ("products", "locations", "customers"):
            current[name] = list(getattr(page, name).all())
        page = services.page_save(page=page, **{**current, **changes}, actor=acting_user(request))
        return Response(self.fresh(page))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.page_delete(page=self.get_object(), actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
