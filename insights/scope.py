"""What an insights page covers: every product, a product group, or one product."""

from __future__ import annotations

from dataclasses import dataclass

from incidents.models import Product, ProductGroup

ALL = "all"


@dataclass(frozen=True)
class Scope:
    key: str
    label: str
    products: tuple[Product, ...]
    is_all: bool = False


@dataclass(frozen=True)
class ScopeChoices:
    groups: tuple[ProductGroup, ...]
    products: tuple[Product, ...]

    def options(self) -> list[tuple[str, str]]:
        out = [(ALL, "All products")]
        out += [(f"group:{g.pk}", f"Group: {g.name}") for g in self.groups]
        out += [
            (f"product:{p.slug}", p.name if p.is_public else f"{p.name} (staff only)") for p in self.products
        ]
        return out

    def resolve(self, key: str) -> Scope | None:
        if key == ALL:
            return Scope(key=ALL, label="All products", products=self.products, is_all=True)
        kind, _, value = key.partition(":")
        if kind == "product":
            found = [p for p in self.products if p.slug == value]
            return Scope(key=key, label=found[0].name, products=tuple(found)) if found else None
        if kind == "group":
            group = next((g for g in self.groups if str(g.pk) == value), None)
            if group is None:
                return None
            members = tuple(p for p in self.products if p.group_id == group.pk)
            return Scope(key=key, label=group.name, products=members)
        return None


def scope_choices() -> ScopeChoices:
    """Two queries: groups and every product (staff see staff-only products too)."""
    return ScopeChoices(
        groups=tuple(ProductGroup.objects.order_by("position", "name")),
        products=tuple(
            Product.objects.select_related("group").order_by("group__position", "position", "name")
        ),
    )
