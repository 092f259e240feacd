"""The status page's product rows: what a card and a grid row hold, and the cached
fragments they are assembled from.

Each product is two fragments, its card (name, status, uptime bars and figure) and its
row of the days grid; each group is two more, made of its products'. A key names all
that its HTML shows: the product's public version (moved by every impact change and
catalogue edit), its status, figures and impacted days (they change with the clock
while an incident is open), the local day, the language and the settings shown. A
change to one product thus makes new keys for it and its group only; the rest of the
page comes from the cache. A card's bars show each day's level only (one character a
day in its key), quiet days drawn as runs; the grid row names the incidents of its few
days. Design:
docs/adr/0015-page-fragments.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import get_script_prefix, reverse
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe

from edge.fragments import fragment_key, fragments
from incidents.daily import Bar
from public_site.day_markup import grid_cells, level_codes
from public_site.pages import (
    UPTIME_BAR_DAYS,
    UPTIME_BAR_DAYS_NARROW,
    ProductBlock,
    ProductRow,
    StatusPage,
)

# --- Keys and assembly ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cards:
    products: SafeString  # the product groups, each with its cards
    grid: SafeString  # the grid's row groups (tbody), each with its rows


def _grid_shown(days: Sequence[Bar]) -> tuple[object, ...]:
    """What a grid row shows of its days: each impacted one's level, count and marks."""
    return tuple((i, d.level, d.incident_count, tuple(d.marks)) for i, d in enumerate(days) if d.impacted)


def _page_context(page: StatusPage) -> tuple[object, ...]:
    """What every fragment shows beside its product: the day, language, settings."""
    return (
        page.grid_days[-1].date if page.grid_days else None,
        translation.get_language(),
        get_script_prefix(),
        settings.DISPLAY_TIME_ZONE,
        UPTIME_BAR_DAYS,
        UPTIME_BAR_DAYS_NARROW,
        len(page.grid_days),
    )


@dataclass(frozen=True)
class RowKeys:
    card: str
    grid: str


def row_keys(
    row: ProductRow, context: tuple[object, ...], seen: dict[tuple[int, int], object] | None = None
) -> RowKeys:
    """The keys of a product's card and grid row, each naming what its HTML shows. `seen`
    shares the work for rows whose days are the same object (status_page gives every
    quiet product the same)."""
    seen = {} if seen is None else seen
    if (0, id(row.days)) not in seen:
        seen[0, id(row.days)] = level_codes(row.days)  # all its bars show
    if (1, id(row.grid)) not in seen:
        seen[1, id(row.grid)] = _grid_shown(row.grid)
    product = row.product
    card = (
        product.pk,
        product.public_version,
        product.public_id,
        product.name,
        product.slug,
        row.status,
        row.uptime.percent,
        row.uptime_narrow.percent,
        seen[0, id(row.days)],
        context,
    )
    grid = (product.pk, product.public_version, product.name, product.slug, seen[1, id(row.grid)], context)
    return RowKeys(card=fragment_key("card", card), grid=fragment_key("grid-row", grid))


class _Builder:
    """Renders what the cache misses, with what is shared by a whole page worked out once."""

    def __init__(self, page: StatusPage) -> None:
        self.page = page
        self.several = len(page.blocks) > 1
        self._quiet: list[SafeString] | None = None

    def quiet_cells(self) -> list[SafeString]:
        if self._quiet is None:
            self._quiet = [
                mark_safe(render_to_string("public/_grid_quiet_cell.html", {"day": d.date}))  # noqa: S308
                for d in self.page.grid_days
            ]
        return self._quiet

    def card(self, row: ProductRow) -> str:
        return render_to_string("public/_product_card.html", {"row": row})

    def grid_row(self, row: ProductRow) -> str:
        url = reverse("public:product", args=[row.product.slug])
        return render_to_string(
            "public/_grid_row.html", {"row": row, "cells": grid_cells(row.grid, self.quiet_cells(), url)}
        )

    def group(self, kind: str, block: ProductBlock, members: list[SafeString]) -> str:
        return render_to_string(
            f"public/_{kind}_group.html",
            {
                "block": block,
                "several": self.several,
                "members": members,
                "columns": len(self.page.grid_days) + 1,
            },
        )


def _assemble(kind: str, page: StatusPage, keys: dict[int, str], build: _Builder) -> SafeString:
    context = _page_context(page)
    group_keys = [
        fragment_key(
            f"{kind}-group",
            block.group.pk if block.group else None,
            block.group.name if block.group else None,
            build.several,
            [keys[row.product.pk] for row in block.rows],
            context,
        )
        for block in page.blocks
    ]
    render_row = build.card if kind == "product" else build.grid_row

    def build_groups(missing: list[int]) -> list[str]:
        blocks = [page.blocks[i] for i in missing]
        rows = [row for block in blocks for row in block.rows]
        members = iter(
            fragments([keys[r.product.pk] for r in rows], lambda m: [render_row(rows[j]) for j in m])
        )
        return [build.group(kind, block, [next(members) for _ in block.rows]) for block in blocks]

    return mark_safe("".join(fragments(group_keys, build_groups)))  # noqa: S308 - rendered templates


def status_cards(page: StatusPage) -> Cards:
    """The product groups and grid rows of `/`, from cached fragments where they are current."""
    context = _page_context(page)
    seen: dict[tuple[int, int], object] = {}
    keys = {row.product.pk: row_keys(row, context, seen) for row in page.rows}
    build = _Builder(page)
    products = _assemble("product", page, {pk: k.card for pk, k in keys.items()}, build)
    grid = _assemble("grid", page, {pk: k.grid for pk, k in keys.items()}, build)
    return Cards(products=products, grid=grid)
