"""Reads: the SLI source of a product and location, and its per-period counts from Prometheus."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from incidents.models import Location
from measurements import prometheus, promql
from measurements.models import SliKind, SliSource

PERCENT_SCALE = Decimal(100)


def source_for(product_id: int, location_id: int | None) -> SliSource | None:
    """The source measuring this product in this location: the location's own, else one
    of its parents', else the product's everywhere source."""
    sources = {s.location_id: s for s in SliSource.objects.filter(product_id=product_id, enabled=True)}
    seen: set[int] = set()
    current = location_id
    while current is not None and current not in seen:
        if current in sources:
            return sources[current]
        seen.add(current)
        current = Location.objects.filter(pk=current).values_list("parent_id", flat=True).first()
    return sources.get(None)


def product_sources(product_id: int) -> list[SliSource]:
    return list(SliSource.objects.filter(product_id=product_id, enabled=True).order_by("pk"))


def _render(query: str, source: SliSource, minutes: int) -> str:
    return promql.render(query, source.label_selector, minutes)


def period_counts(
    source: SliSource, *, start: datetime, end: datetime, minutes: int
) -> dict[datetime, tuple[Decimal, Decimal]]:
    """{period end: (errors, valid)} for the periods of `minutes` in [start, end). An
    error-rate source gives (rate, 100). Raises `prometheus.SourceUnavailable`."""
    step = timedelta(minutes=minutes)
    first = start + step
    if source.kind == SliKind.ERROR_RATE:
        rates = prometheus.query_range(
            source.base_url,
            _render(source.error_rate_query, source, minutes),
            start=first,
            end=end,
            step=step,
        )
        return {at: (rate, PERCENT_SCALE) for at, rate in rates.items()}
    errors = prometheus.query_range(
        source.base_url, _render(source.errors_query, source, minutes), start=first, end=end, step=step
    )
    valid = prometheus.query_range(
        source.base_url, _render(source.valid_query, source, minutes), start=first, end=end, step=step
    )
    # A step with no valid count is a gap; one with requests and no error series had none.
    return {at: (errors.get(at, Decimal(0)), count) for at, count in valid.items()}


def sources_all() -> list[SliSource]:
    """Every source, enabled or not, for the console's list."""
    return list(
        SliSource.objects.select_related("product", "location").order_by("product__name", "location__name")
    )


def measured_product_ids() -> set[int]:
    """Products with at least one enabled source."""
    return set(SliSource.objects.filter(enabled=True).values_list("product_id", flat=True))
