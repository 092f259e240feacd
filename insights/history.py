"""The queries behind the insights page: a range's incidents and windows (the Python path),
action items and credit notices per period (both paths). Each is one query.
Design: docs/adr/0005-insights-sql-path.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Count, Exists, Max, Min, OuterRef, Q, QuerySet, Subquery, Sum

from credits.models import CreditNotice, CustomerEntitlement, NoticeState
from incidents import uptime
from incidents.models import ActionItem, ImpactWindow, Incident
from insights import metrics
from insights.scope import Scope

_CENTS = Decimal(1).scaleb(-CreditNotice._meta.get_field("credit_amount").decimal_places)
_CLOSED_ITEMS = (ActionItem.Status.DONE, ActionItem.Status.WONT_DO)


def _window_filter(scope: Scope) -> Q:
    return Q() if scope.is_all else Q(product__in=[p.pk for p in scope.products])


_FACT_COLUMNS = (
    "id",
    "public_id",
    "title",
    "kind",
    "is_public",
    "started_at",
    "created_at",
    "detected_at",
    "resolved_at",
    "first_update",
    "last_update",
    "update_count",
    "first_posted",
)


def incident_facts(
    *,
    scope: Scope,
    start: datetime,
    end: datetime,
    spans: dict[int, list[uptime.Span]] | None = None,
    newest: int | None = None,
) -> list[metrics.IncidentFacts]:
    """One query: incidents that started in [start, end) and touch the scope, newest first.
    `newest`: only that many incidents (no maintenance), and their spans read with
    `_windows_of` (one more query) instead of taken from `spans`."""
    queryset = Incident.objects.filter(started_at__gte=start, started_at__lt=end)
    if not scope.is_all:
        queryset = queryset.filter(
            Exists(ImpactWindow.objects.filter(_window_filter(scope), incident=OuterRef("pk")))
        )
    if newest is not None:
        # The newest first, then their updates: aggregating the updates of every incident
        # of the range to keep fifty costs as much as the rest of the page.
        ids = queryset.exclude(kind=Incident.Kind.MAINTENANCE).order_by("-started_at", "-id").values("pk")
        queryset = Incident.objects.filter(pk__in=Subquery(ids[:newest]))
    rows = fact_rows(queryset)
    if newest is not None:
        spans = _windows_of(scope=scope, incident_ids=[row[0] for row in rows])
    assert spans is not None
    return facts_of(rows, spans=spans)


def fact_rows(queryset: QuerySet[Incident]) -> list[tuple[Any, ...]]:
    """One query: the incidents of `queryset` with their updates summed up, newest first."""
    return list(
        queryset.annotate(
            first_update=Min("updates__display_at"),
            last_update=Max("updates__display_at"),
            first_posted=Min("updates__created_at"),
            update_count=Count("updates"),
        )
        .values_list(*_FACT_COLUMNS)
        .order_by("-started_at", "-id")
    )


def facts_of(
    rows: Sequence[tuple[Any, ...]], *, spans: dict[int, list[uptime.Span]]
) -> list[metrics.IncidentFacts]:
    """`fact_rows` with each incident's spans, as the maths takes them."""
    return [
        metrics.IncidentFacts(
            incident_id=pk,
            public_id=public_id,
            title=title,
            is_maintenance=kind == Incident.Kind.MAINTENANCE,
            is_public=is_public,
            started_at=started,
            declared_at=created,
            detected_at=detected,
            resolved_at=resolved,
            first_update_at=first,
            last_update_at=last,
            update_count=count,
            first_posted_at=posted,
            spans=tuple(spans.get(pk, ())),
        )
        for (
            pk,
            public_id,
            title,
            kind,
            is_public,
            started,
            created,
            detected,
            resolved,
            first,
            last,
            count,
            posted,
        ) in rows
    ]


def _windows_of(*, scope: Scope, incident_ids: Sequence[int]) -> dict[int, list[uptime.Span]]:
    """One query: the windows in scope of the given incidents, by incident (in the order
    `windows` gives them)."""
    rows = (
        ImpactWindow.objects.filter(_window_filter(scope), incident_id__in=list(incident_ids))
        .values_list("incident_id", "level", "started_at", "ended_at")
        .order_by("started_at", "id")
    )
    out: dict[int, list[uptime.Span]] = defaultdict(list)
    for incident_id, level, started, ended in rows:
        out[incident_id].append(uptime.Span(level=level, start=started, end=ended, incident_id=incident_id))
    return out


def windows(
    *, scope: Scope, start: datetime, end: datetime
) -> tuple[dict[int, list[uptime.Span]], dict[int, list[uptime.Span]]]:
    """One query: windows in scope that overlap [start, end) or belong to an incident that
    started in it. Returns the spans by incident and by product."""
    overlap = Q(started_at__lt=end) & (Q(ended_at__isnull=True) | Q(ended_at__gt=start))
    started_inside = Q(incident__started_at__gte=start, incident__started_at__lt=end)
    rows = (
        ImpactWindow.objects.filter(_window_filter(scope))
        .filter(overlap | started_inside)
        .values_list("incident_id", "product_id", "level", "started_at", "ended_at")
        .order_by("started_at", "id")
    )
    by_incident: dict[int, list[uptime.Span]] = defaultdict(list)
    by_product: dict[int, list[uptime.Span]] = defaultdict(list)
    for incident_id, product_id, level, started, ended in rows:
        span = uptime.Span(level=level, start=started, end=ended, incident_id=incident_id)
        by_incident[incident_id].append(span)
        by_product[product_id].append(span)
    return by_incident, by_product


def action_items(
    *, scope: Scope, periods: Sequence[metrics.Period], now: datetime, tz: ZoneInfo
) -> tuple[metrics.ActionItemCounts, ...]:
    """One aggregate query, three counts per period.

    Action items have no closing time of their own: a done or won't-do item is dated by
    its last change (`updated_at`), which is when it was closed unless it was edited later.
    """
    # Only items that can count in some period: still open, or created or changed since the
    # range began (closed before it, an item is neither opened, closed nor overdue in it).
    since = min(periods[0].start, now)
    queryset = ActionItem.objects.filter(
        Q(status__in=ActionItem.OPEN_STATUSES) | Q(updated_at__gte=since) | Q(created_at__gte=since)
    )
    if not scope.is_all:
        queryset = queryset.filter(
            Exists(ImpactWindow.objects.filter(_window_filter(scope), incident=OuterRef("incident_id")))
        )
    counts_by_name: dict[str, Any] = {}
    for i, p in enumerate(periods):
        moment = min(p.end, now)
        still_open = Q(status__in=ActionItem.OPEN_STATUSES) | Q(
            status__in=_CLOSED_ITEMS, updated_at__gte=moment
        )
        counts_by_name[f"opened_{i}"] = Count("id", filter=Q(created_at__gte=p.start, created_at__lt=p.end))
        counts_by_name[f"closed_{i}"] = Count(
            "id", filter=Q(status__in=_CLOSED_ITEMS, updated_at__gte=p.start, updated_at__lt=p.end)
        )
        counts_by_name[f"overdue_{i}"] = Count(
            "id",
            filter=Q(created_at__lt=moment, due_date__lt=uptime.local_date(moment, tz)) & still_open,
        )
    counts = queryset.aggregate(**counts_by_name)
    return tuple(
        metrics.ActionItemCounts(
            period=p,
            opened=counts[f"opened_{i}"] or 0,
            closed=counts[f"closed_{i}"] or 0,
            overdue=counts[f"overdue_{i}"] or 0,
        )
        for i, p in enumerate(periods)
    )


def credits(*, scope: Scope, periods: Sequence[metrics.Period]) -> tuple[metrics.CreditTotals, ...]:
    """One grouped query. Notices are per customer and calendar month of the policy; a
    scope keeps the notices of customers entitled to one of its products."""
    months: dict[str, metrics.Period] = {}
    for p in periods:
        for k in range(p.months):
            months[f"{metrics.add_months(p.first_day, k):%Y-%m}"] = p
    queryset = CreditNotice.objects.filter(period__in=list(months)).exclude(state=NoticeState.CANCELLED)
    if not scope.is_all:
        queryset = queryset.filter(
            Exists(
                CustomerEntitlement.objects.filter(
                    customer=OuterRef("customer_id"), product__in=[p.pk for p in scope.products]
                )
            )
        )
    rows = (
        queryset.values("period", "state", "unit", "customer__currency")
        .annotate(n=Count("id"), credit=Sum("credit"), amount=Sum("credit_amount"))
        .order_by("period")
    )
    totals: dict[metrics.Period, dict[str, Any]] = {
        p: {"issued": 0, "pending": 0, "days": Decimal(0), "percent": 0, "amounts": defaultdict(Decimal)}
        for p in periods
    }
    for row in rows:
        entry = totals[months[row["period"]]]
        if row["state"] != NoticeState.SENT:
            entry["pending"] += row["n"]
            continue
        entry["issued"] += row["n"]
        if row["unit"] == CreditNotice.Unit.DAYS:
            entry["days"] += row["credit"] or Decimal(0)
        else:
            entry["percent"] += row["n"]
            if row["amount"] is not None:
                entry["amounts"][row["customer__currency"]] += row["amount"]
    return tuple(
        metrics.CreditTotals(
            period=p,
            issued=t["issued"],
            pending=t["pending"],
            days=t["days"],
            percent_notices=t["percent"],
            # Money at the column's scale on every database (SQLite's SUM drops it: "120").
            amounts=tuple(sorted((c, a.quantize(_CENTS)) for c, a in t["amounts"].items())),
        )
        for p, t in totals.items()
    )
