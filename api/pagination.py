"""Cursor pagination that stays stable while rows are inserted (keyset, not offsets).

A page number counts rows from the top, so a row inserted between two requests shifts
every later page by one and the next page repeats a row. Here a cursor names the last
(or first) row of the page it came from by its sort key, so the next page starts
strictly after that row, whatever was inserted or deleted meanwhile: no row twice, none
skipped.

Whatever order a list sorts by (a whitelisted `ordering`, nulls last or first, a related
field such as `customer__name`), the key is that ordering plus the primary key, which
makes it total. The cursor is opaque (base64url JSON of the key values and a direction);
a cursor that does not decode or does not fit this list's ordering is a 400 naming
`cursor`, never a 404 or a 500.

The body keeps the shape clients know (`count`, `next`, `previous`, `results`) and the
same links go in an RFC 8288 `Link` header (rel="next", rel="prev").
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import F, OrderBy, Q, QuerySet
from rest_framework import serializers
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

MAX_PAGE_SIZE = 200
DEFAULT_PAGE_SIZE = 50
CURSOR_PARAM = "cursor"
PAGE_SIZE_PARAM = "page_size"
PAGINATION_PARAMS = frozenset({CURSOR_PARAM, PAGE_SIZE_PARAM})
BAD_CURSOR = "Not a cursor of this list: use the `next` or `previous` link as given."


@dataclass(frozen=True)
class Key:
    """One column of the sort key."""

    path: str  # a field path such as "started_at" or "customer__name"
    descending: bool
    nulls_last: bool

    def reversed(self) -> Key:
        return Key(self.path, not self.descending, not self.nulls_last)

    def value_of(self, row: Any) -> Any:
        value = row
        for part in self.path.split("__"):
            value = None if value is None else getattr(value, part)
        return value

    def after(self, value: Any) -> Q:
        """Rows strictly after `value` in this column's order."""
        if value is None:
            return Q(pk__in=[]) if self.nulls_last else Q(**{f"{self.path}__isnull": False})
        beyond = Q(**{f"{self.path}__{'lt' if self.descending else 'gt'}": value})
        return beyond | Q(**{f"{self.path}__isnull": True}) if self.nulls_last else beyond

    def equal(self, value: Any) -> Q:
        return Q(**{f"{self.path}__isnull": True}) if value is None else Q(**{self.path: value})

    def order(self) -> OrderBy:
        expression = F(self.path)
        nulls = {"nulls_last": True} if self.nulls_last else {"nulls_first": True}
        return expression.desc(**nulls) if self.descending else expression.asc(**nulls)


def sort_key(queryset: QuerySet[Any]) -> list[Key]:
    """The queryset's ordering as keys, made total with the primary key."""
    keys: list[Key] = []
    for item in queryset.query.order_by or queryset.model._meta.ordering or ():
        if isinstance(item, str):
            descending = item.startswith("-")
            path = item.lstrip("-")
            # PostgreSQL's defaults: nulls last ascending, first descending.
            keys.append(Key(path, descending, nulls_last=not descending))
        elif isinstance(item, OrderBy) and isinstance(item.expression, F):
            nulls_last = (
                bool(item.nulls_last) if (item.nulls_last or item.nulls_first) else not item.descending
            )
            keys.append(Key(item.expression.name, item.descending, nulls_last))  # type: ignore[attr-defined]
        else:
            raise TypeError(f"cursor pagination cannot sort on {item!r}")
    keys = [Key("pk" if key.path == "id" else key.path, key.descending, key.nulls_last) for key in keys]
    if not any(key.path == "pk" for key in keys):
        keys.append(Key("pk", keys[-1].descending if keys else False, nulls_last=True))
    return keys[: [key.path for key in keys].index("pk") + 1]


def after_row(keys: list[Key], values: list[Any]) -> Q:
    """Rows after the one with these key values: (k1 > v1) or (k1 = v1 and k2 > v2) ..."""
    condition = Q(pk__in=[])
    for index, key in enumerate(keys):
        clause = key.after(values[index])
        for earlier, value in zip(keys[:index], values[:index], strict=True):
            clause &= earlier.equal(value)
        condition |= clause
    return condition


def _coerce(model: Any, keys: list[Key], values: list[Any]) -> list[Any]:
    """The cursor's values as their columns' Python types; a 400 if one cannot be."""
    coerced = []
    for key, value in zip(keys, values, strict=True):
        field, current = None, model
        try:
            for part in key.path.split("__"):
                field = current._meta.pk if part == "pk" else current._meta.get_field(part)
                current = field.related_model or current
        except FieldDoesNotExist:
            field = None  # an annotation: compared as sent
        try:
            coerced.append(value if value is None or field is None else field.to_python(value))
        except (DjangoValidationError, ValueError, TypeError):
            raise serializers.ValidationError({CURSOR_PARAM: [BAD_CURSOR]}) from None
    return coerced


def _encode(values: list[Any], backwards: bool) -> str:
    raw = json.dumps({"k": values, "b": backwards}, default=str, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(cursor: str, keys: list[Key]) -> tuple[list[Any], bool]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        values, backwards = data["k"], data["b"]
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise serializers.ValidationError({CURSOR_PARAM: [BAD_CURSOR]}) from None
    if not isinstance(values, list) or len(values) != len(keys) or not isinstance(backwards, bool):
        raise serializers.ValidationError({CURSOR_PARAM: [BAD_CURSOR]})
    if any(not isinstance(v, str | int | None) or isinstance(v, bool) for v in values):
        raise serializers.ValidationError({CURSOR_PARAM: [BAD_CURSOR]})
    return values, backwards


def link_header(data: Any) -> str | None:
    """RFC 8288 `Link` for a page body: its `next` and `previous` as rel="next"/"prev"."""
    if not isinstance(data, dict) or "results" not in data:
        return None
    pairs = ((data.get("next"), "next"), (data.get("previous"), "prev"))
    links = [f'<{url}>; rel="{rel}"' for url, rel in pairs if isinstance(url, str)]
    return ", ".join(links) or None


class CursorPagination(BasePagination):
    """Keyset pages of `page_size` rows (1..200, else a 400), in the queryset's order."""

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(PAGE_SIZE_PARAM)
        if raw is None:
            return DEFAULT_PAGE_SIZE
        size = int(raw) if raw.isdigit() else 0
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise serializers.ValidationError(
                {PAGE_SIZE_PARAM: [f"A whole number from 1 to {MAX_PAGE_SIZE}."]}
            )
        return size

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        size = self.get_page_size(request)
        keys = sort_key(queryset)
        self.request, self.keys = request, keys
        cursor = request.query_params.get(CURSOR_PARAM)
        backwards = False
        page = queryset
        if cursor is not None:
            values, backwards = _decode(cursor, keys)
            values = _coerce(queryset.model, keys, values)
            order = [key.reversed() for key in keys] if backwards else keys
            page = queryset.filter(after_row(order, values))
        order = [key.reversed() for key in keys] if backwards else keys
        rows = list(page.order_by(*(key.order() for key in order))[: size + 1])
        more = len(rows) > size
        rows = rows[:size]
        # A first page with nothing after it holds the whole list: no COUNT needed.
        self.count = len(rows) if cursor is None and not more else queryset.count()
        if backwards:
            rows.reverse()
        # Going forwards, there is a page behind whenever we came through a cursor; going
        # backwards, ahead of this one is the page the cursor came from.
        has_next = backwards or more
        has_previous = (more if backwards else cursor is not None) and bool(rows)
        self.next_link = self._link(rows[-1], backwards=False) if has_next and rows else None
        self.previous_link = self._link(rows[0], backwards=True) if has_previous else None
        return rows

    def _link(self, row: Any, *, backwards: bool) -> str:
        values = [key.value_of(row) for key in self.keys]
        values = [
            v if v is None or (isinstance(v, int | str) and not isinstance(v, bool)) else str(v)
            for v in values
        ]
        url = self.request.build_absolute_uri()
        return replace_query_param(url, CURSOR_PARAM, _encode(values, backwards))

    def get_paginated_response(self, data: Any) -> Response:
        # The `Link` header is APIMixin.finalize_response's (link_header), which also serves
        # a page memoised for anonymous callers.
        return Response(
            {"count": self.count, "next": self.next_link, "previous": self.previous_link, "results": data}
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        # OpenAPI 3.1 spelling of nullable (the schema is 3.1; `nullable` is 3.0 only).
        link = {"type": ["string", "null"], "format": "uri"}
        return {
            "type": "object",
            "required": ["count", "results"],
            "properties": {
                "count": {"type": "integer", "description": "Results on all pages, now.", "example": 123},
                "next": {**link, "description": "The next page, or null on the last.", "example": None},
                "previous": {
                    **link,
                    "description": "The previous page, or null on the first.",
                    "example": None,
                },
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": CURSOR_PARAM,
                "required": False,
                "in": "query",
                "description": "Where the page starts: take it from a `next` or `previous` link (opaque).",
                "schema": {"type": "string"},
            },
            {
                "name": PAGE_SIZE_PARAM,
                "required": False,
                "in": "query",
                "description": f"Results per page (default {DEFAULT_PAGE_SIZE}, at most {MAX_PAGE_SIZE}).",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_PAGE_SIZE,
                    "default": DEFAULT_PAGE_SIZE,
                },
            },
        ]
