"""Maintained counts of public incidents per month, for the reads that show a count
over the whole history: the archive's month list ("March (12)") and a product page's
"Page 1 of N". Counting the history at each render reads every incident ever filed;
these rows (`HistoryCount`, one per month and one per month and product) are refreshed
by the write services for the months a write touches, and read in a handful of rows.
Design: docs/adr/0019-bounded-public-reads.md.

Months are those of the display zone, and rows carry the zone's name: after a change of
DISPLAY_TIME_ZONE, or on a database filled without the services (bench loaders), the
first read finds no row for the zone and rebuilds them all (`history_counts_rebuild`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime

from django.db import transaction
from django.db.models import Count, Sum
from django.db.models.functions import TruncMonth

from core.timezones import display_zone
from incidents import uptime
from incidents.models import HistoryCount, ImpactWindow, Incident, Product
from incidents.selectors import incidents_public


def _zone() -> str:
    return str(display_zone())


def month_of(at: datetime) -> date:
    return uptime.local_date(at, display_zone()).replace(day=1)


def _next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def _refresh(zone: str, month: date) -> None:
    tz = display_zone()
    HistoryCount.objects.bulk_create([HistoryCount(zone=zone, month=month)], ignore_conflicts=True)
    # The month's page row, locked: two writes in one month recount one after the other,
    # and the second (a new statement, READ COMMITTED) sees what the first committed.
    page = HistoryCount.objects.select_for_update().get(zone=zone, month=month, product__isnull=True)
    in_month = incidents_public().filter(
        started_at__gte=uptime.local_midnight(month, tz),
        started_at__lt=uptime.local_midnight(_next_month(month), tz),
    )
    page.count = in_month.count()
    page.save(update_fields=["count"])
    per_product = (
        ImpactWindow.objects.filter(incident__in=in_month.values("pk"))
        .values("product_id")
        .annotate(n=Count("incident_id", distinct=True))
        .values_list("product_id", "n")
    )
    HistoryCount.objects.filter(zone=zone, month=month, product__isnull=False).delete()
    HistoryCount.objects.bulk_create(
        HistoryCount(zone=zone, month=month, product_id=product_id, count=n) for product_id, n in per_product
    )


@transaction.atomic
def history_counts_refresh(*, months: Iterable[date]) -> None:
    """Recount the given months (first days, display zone), in month order so that two
    writes lock them in the same order."""
    zone = _zone()
    for month in sorted(set(months)):
        _refresh(zone, month)


def history_counts_refresh_incident(incident: Incident, *, moved_from: datetime | None = None) -> None:
    """What a write to `incident` changes: the month it starts in (and the one it left)."""
    starts = [incident.started_at, *([moved_from] if moved_from is not None else [])]
    history_counts_refresh(months=[month_of(at) for at in starts])


@transaction.atomic
def history_counts_rebuild() -> None:
    """Every month again, from the history (a product's visibility changed, the display
    zone changed, or incidents were loaded in bulk)."""
    zone = _zone()
    HistoryCount.objects.filter(zone=zone).delete()
    months = (
        incidents_public()
        .annotate(month=TruncMonth("started_at", tzinfo=display_zone()))
        .values_list("month", flat=True)
        .distinct()
    )
    history_counts_refresh(months=[_as_month(m) for m in months])


def _as_month(value: date | datetime) -> date:
    day = value.astimezone(display_zone()).date() if isinstance(value, datetime) else value
    return day.replace(day=1)


def _ready(zone: str) -> None:
    if not HistoryCount.objects.filter(zone=zone).exists() and incidents_public().exists():
        history_counts_rebuild()


def history_month_counts() -> list[tuple[date, int]]:
    """Every month with public incidents and how many, newest first."""
    zone = _zone()
    _ready(zone)
    rows = HistoryCount.objects.filter(zone=zone, product__isnull=True, count__gt=0).order_by("-month")
    return list(rows.values_list("month", "count"))


def history_product_total(product: Product) -> int:
    """How many public incidents have a window on `product`: one row per month it had any."""
    zone = _zone()
    _ready(zone)
    return HistoryCount.objects.filter(zone=zone, product=product).aggregate(n=Sum("count"))["n"] or 0
