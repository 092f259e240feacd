"""The catalogue: product groups, products and locations.

They are configuration, but every one of them shows on the public page, so each write
here bumps the public version (the admin used to save them directly and bump the cache
itself). What history refers to is never deleted: the delete raises `InUse`, and a
product with history is archived instead.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import ProtectedError, RestrictedError
from django.utils import timezone

from core import roles
from core.errors import InUse
from core.text import check_range, clean_single_line, clean_text
from edge import version as public_cache
from incidents import events
from incidents.history_counts import history_counts_rebuild
from incidents.markdown import render_for_storage
from incidents.models import ImpactWindow, Location, Product, ProductGroup
from incidents.services._common import products_changed

M = TypeVar("M", bound=models.Model)

PRODUCT_FIELDS = frozenset({"name", "slug", "description", "position", "group", "is_public"})
GROUP_FIELDS = frozenset({"name", "position"})
LOCATION_FIELDS = frozenset({"name", "display_name", "kind", "parent"})


def _save(instance: M, *, changes: dict[str, Any], allowed: frozenset[str], single_line: dict[str, int]) -> M:
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError(f"These fields cannot be set here: {', '.join(sorted(unknown))}.")
    for name, value in changes.items():
        if name in single_line and (value or name != "display_name"):
            value = clean_single_line(value, field=name, max_length=single_line[name])
        if name == "description":
            value = clean_text(value, field=name)
            instance.description_html = render_for_storage(value, field=name)  # type: ignore[attr-defined]
        setattr(instance, name, value)
    if "position" in changes:
        check_range(instance.position, field="position", low=0, high=2**31 - 1)  # type: ignore[attr-defined]
    instance.full_clean()
    if instance.pk is None:
        instance.save()
    else:
        # Every field but the version, which moves only by an UPDATE (a stale copy must
        # not write an older version back).
        fields = [f.name for f in instance._meta.concrete_fields if not f.primary_key]
        instance.save(update_fields=[name for name in fields if name != "public_version"])
    public_cache.public_state_changed()
    return instance


@transaction.atomic
def product_create(*, actor: User | None = None, **fields: Any) -> Product:
    roles.check(actor, "incident.edit")
    return _save(Product(), changes=fields, allowed=PRODUCT_FIELDS, single_line={"name": 100})


@transaction.atomic
def product_edit(*, product: Product, changes: dict[str, Any], actor: User | None = None) -> Product:
    roles.check(actor, "incident.edit")
    was_public = product.is_public
    # From the database: the admin's form has already set the new group on `product`.
    was_group = Product.objects.filter(pk=product.pk).values_list("group_id", flat=True).first()
    product = _save(product, changes=changes, allowed=PRODUCT_FIELDS, single_line={"name": 100})
    products_changed([product.pk])
    if product.group_id != was_group:
        events.announce_regrouped(products=frozenset([product.pk]))
    if product.is_public != was_public:
        # Every incident on it may appear or vanish, in any month.
        history_counts_rebuild()
    return product


def _delete(instance: models.Model, *, what: str, instead: str) -> None:
    """Delete, or raise `InUse` naming what still refers to it (PROTECT or RESTRICT)."""
    try:
        with transaction.atomic():
            type(instance)._default_manager.filter(pk=instance.pk).delete()
    except (ProtectedError, RestrictedError) as refused:
        kinds = sorted({str(obj._meta.verbose_name_plural) for obj in refused.args[1]})
        raise InUse(f"{what} cannot be deleted: {', '.join(kinds)} refer to it. {instead}") from None


@transaction.atomic
def product_delete(*, product: Product, actor: User | None = None) -> None:
    """Delete a product nothing refers to; one with impact windows is archived instead."""
    roles.check(actor, "incident.edit")
    if ImpactWindow.objects.filter(product=product).exists():
        raise InUse(
            f"{product.name} has impact windows in its history and cannot be deleted: "
            "archive it instead (it leaves the status page and its history stays)."
        )
    _delete(product, what=product.name, instead="Archive it instead.")
    public_cache.public_state_changed()


@transaction.atomic
def product_archive(*, product: Product, archived: bool = True, actor: User | None = None) -> Product:
    """Retire a product from the catalogue (or bring it back): it leaves the status page
    and takes no new impact; the incidents that had impact on it keep their history."""
    roles.check(actor, "incident.edit")
    product = Product.objects.select_for_update().get(pk=product.pk)
    if archived and ImpactWindow.objects.filter(product=product, ended_at__isnull=True).exists():
        raise ValidationError({"archived": f"{product.name} has open impact: end it before archiving."})
    if (product.archived_at is not None) != archived:
        product.archived_at = timezone.now() if archived else None
        product.save(update_fields=["archived_at", "updated_at"])
        products_changed([product.pk])
        public_cache.public_state_changed()
    return product


@transaction.atomic
def product_group_create(*, actor: User | None = None, **fields: Any) -> ProductGroup:
    roles.check(actor, "incident.edit")
    return _save(ProductGroup(), changes=fields, allowed=GROUP_FIELDS, single_line={"name": 100})


@transaction.atomic
def product_group_edit(
    *, group: ProductGroup, changes: dict[str, Any], actor: User | None = None
) -> ProductGroup:
    roles.check(actor, "incident.edit")
    group = _save(group, changes=changes, allowed=GROUP_FIELDS, single_line={"name": 100})
    products_changed(group.products.values_list("pk", flat=True))
    return group


@transaction.atomic
def product_group_delete(*, group: ProductGroup, actor: User | None = None) -> None:
    roles.check(actor, "incident.edit")
    members = frozenset(group.products.values_list("pk", flat=True))
    products_changed(members)
    ProductGroup.objects.filter(pk=group.pk).delete()
    events.announce_regrouped(products=members)
    public_cache.public_state_changed()


_LOCATION_LINES = {"name": 64, "display_name": 100}


@transaction.atomic
def location_create(*, actor: User | None = None, **fields: Any) -> Location:
    roles.check(actor, "incident.edit")
    return _save(Location(), changes=fields, allowed=LOCATION_FIELDS, single_line=_LOCATION_LINES)


@transaction.atomic
def location_edit(*, location: Location, changes: dict[str, Any], actor: User | None = None) -> Location:
    roles.check(actor, "incident.edit")
    parent = changes.get("parent")
    # Walk up from the new parent: a location may not end up inside its own subtree.
    node = parent
    while node is not None and location.pk is not None:
        if node.pk == location.pk:
            raise ValidationError({"parent": "A location cannot be inside itself."})
        node = node.parent
    location = _save(location, changes=changes, allowed=LOCATION_FIELDS, single_line=_LOCATION_LINES)
    products_changed(ImpactWindow.objects.filter(location=location).values_list("product_id", flat=True))
    return location


@transaction.atomic
def location_delete(*, location: Location, actor: User | None = None) -> None:
    roles.check(actor, "incident.edit")
    if ImpactWindow.objects.filter(location=location).exists():
        raise InUse(f"{location.name} has impact windows in its history and cannot be deleted.")
    _delete(location, what=location.name, instead="Move or delete what refers to it first.")
    public_cache.public_state_changed()
