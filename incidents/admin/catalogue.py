"""Catalogue admin: product groups, products, locations (written through the catalogue services)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models import Case, OuterRef, Q, QuerySet, Subquery, Value, When
from django.http import HttpRequest
from django.utils import timezone

from core.admin import ServiceModelAdmin, TabularInlineBase, actor, adopt, call_service, record_formset
from incidents import services
from incidents.admin.forms import (
    LocationAdminForm,
)
from incidents.models import (
    ImpactWindow,
    Location,
    Product,
    ProductGroup,
)
from incidents.selectors import LEVEL_SEVERITY, OPERATIONAL, PRODUCT_STATUS_LABELS

# --- Catalogue: groups, products, locations -------------------------------------------------


class CatalogueAdmin(ServiceModelAdmin):
    """Groups, products and locations are saved through the catalogue services, which
    validate names and bump the public version; the admin only parses the form."""

    create: Callable[..., Any]
    edit: Callable[..., Any]
    delete: Callable[..., None]
    entity: str  # the keyword the edit/delete services take

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        data = form.cleaned_data
        fields = [f for f in form._meta.fields if f in data]
        if change:
            changes = {name: data[name] for name in form.changed_data if name in fields}
            if changes:
                call_service("", type(self).edit, **{self.entity: obj}, changes=changes, actor=actor(request))
            return
        saved = call_service(
            "", type(self).create, **{name: data[name] for name in fields}, actor=actor(request)
        )
        adopt(obj, saved)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        type(self).delete(**{self.entity: obj}, actor=actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            type(self).delete(**{self.entity: obj}, actor=actor(request))


INLINE_PRODUCT_FIELDS: list[str] = ["name", "slug", "position", "is_public"]


class ProductInline(TabularInlineBase):
    model = Product
    fields = list(INLINE_PRODUCT_FIELDS)  # type: ignore[assignment]
    prepopulated_fields = {"slug": ("name",)}
    extra = 0
    show_change_link = True


@admin.register(ProductGroup)
class ProductGroupAdmin(CatalogueAdmin):
    create = staticmethod(services.product_group_create)
    edit = staticmethod(services.product_group_edit)
    delete = staticmethod(services.product_group_delete)
    entity = "group"
    fields = ["name", "position"]
    list_display = ["name", "position", "product_count"]
    list_editable = ["position"]
    search_fields = ["name"]
    inlines = [ProductInline]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # The group's products inline: each row through the product services too.
        new, changed, deleted = [], [], []
        for row in formset.deleted_forms:
            if row.instance.pk is not None:
                services.product_delete(product=row.instance, actor=actor(request))
                deleted.append(row.instance)
        for number, row in enumerate(formset.forms, start=1):
            if row in formset.deleted_forms or not row.has_changed():
                continue
            data, context = row.cleaned_data, f"Product {number}"
            if row.instance.pk is None:
                fields = {name: data[name] for name in INLINE_PRODUCT_FIELDS if name in data}
                new.append(
                    call_service(
                        context, services.product_create, **fields, group=form.instance, actor=actor(request)
                    )
                )
            else:
                changes = {name: data[name] for name in row.changed_data if name in INLINE_PRODUCT_FIELDS}
                changed.append(
                    (
                        call_service(
                            context,
                            services.product_edit,
                            product=row.instance,
                            changes=changes,
                            actor=actor(request),
                        ),
                        row.changed_data,
                    )
                )
        record_formset(formset, new=new, changed=changed, deleted=deleted)

    @admin.display(description="Products")
    def product_count(self, obj: ProductGroup) -> int:
        return obj.products.count()


def _current_level() -> Subquery:
    """The worst level among a product's windows open now, as one correlated subquery."""
    now = timezone.now()
    severity = Case(
        *[
            When(level=level, then=Value(rank))
            for level, rank in LEVEL_SEVERITY.items()
            if level != OPERATIONAL
        ],
        default=Value(0),
    )
    open_now = (
        ImpactWindow.objects.filter(product=OuterRef("pk"), started_at__lte=now)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=now))
        .annotate(severity=severity)
        .order_by("-severity")
        .values("level")[:1]
    )
    return Subquery(open_now)


@admin.register(Product)
class ProductAdmin(CatalogueAdmin):
    create = staticmethod(services.product_create)
    edit = staticmethod(services.product_edit)
    delete = staticmethod(services.product_delete)
    entity = "product"
    list_display = ["name", "group", "slug", "position", "is_public", "current_status"]
    list_filter = ["group", "is_public"]
    list_select_related = ["group"]
    search_fields = ["name", "slug", "description"]
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ["public_id"]
    fields = ["name", "slug", "group", "position", "is_public", "description", "public_id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Product]:
        return super().get_queryset(request).annotate(current_level=_current_level())

    @admin.display(description="Current status")
    def current_status(self, obj: Product) -> str:
        level = getattr(obj, "current_level", None) or OPERATIONAL
        return str(PRODUCT_STATUS_LABELS.get(level, level))


@admin.register(Location)
class LocationAdmin(CatalogueAdmin):
    create = staticmethod(services.location_create)
    edit = staticmethod(services.location_edit)
    delete = staticmethod(services.location_delete)
    entity = "location"
    form = LocationAdminForm
    list_display = ["path", "name", "display_name", "kind", "parent"]
    list_filter = ["kind", ("parent", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["parent__parent"]
    search_fields = ["name", "display_name"]
    ordering = ["name"]
    autocomplete_fields = ["parent"]

    @admin.display(description="Location", ordering="name")
    def path(self, obj: Location) -> str:
        # Shown as the tree path so zones read next to their region: us-central1 / us-central1-b.
        parts = [obj.name]
        node = obj.parent
        while node is not None and len(parts) < 5:
            parts.append(node.name)
            node = node.parent
        return " / ".join(reversed(parts))
