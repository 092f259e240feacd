"""Keeping `insights.models` fresh: each incident's figures, and each product's stretches
of worst level, recomputed by the write services through the incident event registry
(handlers run inside the service's transaction), or all at once by
`manage.py rebuild_incident_facts`. The figures come from `insights.metrics`, the same
definitions the Python path uses (docs/adr/0018-incident-facts.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from core.timezones import display_zone
from incidents import events, uptime
from incidents.models import ImpactWindow, Incident, Product
from insights import history, metrics, scope_facts
from insights.models import ImpactStretch, IncidentFacts

_BATCH = 2000
_NO_WEIGHTS = uptime.Weights.of(major=1, partial=1, degraded=0)  # the measures need none


def _micros(delta: timedelta | None) -> int | None:
    if delta is None:
        return None
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def facts_row(facts: metrics.IncidentFacts) -> IncidentFacts:
    """The stored row of one incident, from `metrics.incident_row`'s own figures."""
    row = metrics.incident_row(facts, now=timezone.now(), weights=_NO_WEIGHTS)
    return IncidentFacts(
        incident_id=facts.incident_id,
        started_at=facts.started_at,
        is_maintenance=facts.is_maintenance,
        is_public=facts.is_public,
        is_open=facts.resolved_at is None,
        severity=max((uptime.SEVERITY[s.level] for s in facts.spans), default=0),
        detect_us=_micros(row.time_to_detect),
        first_update_us=_micros(row.time_to_first_update),
        resolve_us=_micros(row.time_to_resolve),
        cadence_us=_micros(row.update_cadence),
    )


def _spans_of(incident_ids: Sequence[int]) -> dict[int, list[uptime.Span]]:
    out: dict[int, list[uptime.Span]] = defaultdict(list)
    rows = ImpactWindow.objects.filter(incident_id__in=list(incident_ids)).values_list(
        "incident_id", "level", "started_at", "ended_at"
    )
    for incident_id, level, started, ended in rows:
        out[incident_id].append(uptime.Span(level=level, start=started, end=ended, incident_id=incident_id))
    return out


def incident_facts_refresh(incident_ids: Iterable[int]) -> None:
    """Recompute the facts of these incidents (two queries and a write; a deleted
    incident's row is already gone with it), then their scope rows and month sums."""
    ids = sorted(set(incident_ids))
    _facts_write(ids)
    scope_facts.scope_refresh(ids)


def _facts_write(ids: Sequence[int]) -> None:
    rows = history.fact_rows(Incident.objects.filter(pk__in=ids))
    fresh = [facts_row(f) for f in history.facts_of(rows, spans=_spans_of(ids))]
    IncidentFacts.objects.bulk_create(
        fresh,
        update_conflicts=True,
        unique_fields=["incident"],
        update_fields=[f.name for f in IncidentFacts._meta.concrete_fields if not f.primary_key],
    )


class Stretch(NamedTuple):
    severity: int
    start: datetime
    end: datetime | None  # None: open


def stretches(windows: Iterable[tuple[str, datetime, datetime | None]]) -> list[Stretch]:
    """The maximal stretches over which one level is the worst covering, from (level,
    start, end) windows; end None is open. Empty windows cover nothing. The same sweep
    as `insights.aggregates.downtime_by_level`, without the range."""
    changes: dict[datetime, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for level, start, end in windows:
        if end is not None and end <= start:
            continue
        severity = uptime.SEVERITY[level]
        changes[start][severity] += 1
        if end is not None:
            changes[end][severity] -= 1
    covering: dict[int, int] = defaultdict(int)
    out: list[Stretch] = []
    current, since = 0, None
    for moment in sorted(changes):
        for severity, d in changes[moment].items():
            covering[severity] += d
        worst = max((s for s, n in covering.items() if n > 0), default=0)
        if worst == current:
            continue
        if current and since is not None:
            out.append(Stretch(current, since, moment))
        current, since = worst, moment
    if current and since is not None:
        out.append(Stretch(current, since, None))
    return out


def product_stretches_refresh(product_ids: Iterable[int]) -> None:
    """Recompute each product's stretches from all its windows, writing only the
    difference (a window change moves a few stretches), and move its downtime months by
    the difference too."""
    tz = display_zone()
    for product_id in sorted(set(product_ids)):
        windows = ImpactWindow.objects.filter(product_id=product_id).values_list(
            "level", "started_at", "ended_at"
        )
        wanted = set(stretches(windows))
        stored = {
            Stretch(severity, start, end): pk
            for pk, severity, start, end in ImpactStretch.objects.filter(product_id=product_id).values_list(
                "pk", "severity", "started_at", "ended_at"
            )
        }
        gone = [pk for stretch, pk in stored.items() if stretch not in wanted]
        if gone:
            ImpactStretch.objects.filter(pk__in=gone).delete()
        delta = scope_facts.stretch_months(((product_id, *s) for s in wanted - set(stored)), tz)
        delta.subtract(scope_facts.stretch_months(((product_id, *s) for s in set(stored) - wanted), tz))
        scope_facts.downtime_add(delta)
        ImpactStretch.objects.bulk_create(
            [
                ImpactStretch(product_id=product_id, severity=s.severity, started_at=s.start, ended_at=s.end)
                for s in sorted(wanted - set(stored))
            ],
            batch_size=_BATCH,
        )


def on_regrouped(product_ids: frozenset[int]) -> None:
    """A product moved to another group (or out of one): the group rows of every
    incident with a window on it change."""
    ids = ImpactWindow.objects.filter(product_id__in=list(product_ids)).values_list("incident_id", flat=True)
    incidents = sorted(set(ids))
    for lo in range(0, len(incidents), _BATCH):
        scope_facts.scope_refresh(incidents[lo : lo + _BATCH])


def on_incident_event(event: events.IncidentEvent) -> None:
    """Every event about an incident may move its figures; those naming products may
    move the products' stretches."""
    if event.incident.pk is not None:
        incident_facts_refresh([event.incident.pk])
    if event.products:
        product_stretches_refresh(event.products)


@transaction.atomic
def facts_rebuild(*, progress: Callable[[str], object] | None = None) -> tuple[int, int]:
    """Every incident's facts and every product's stretches from scratch, then the scope
    rows and month sums built on them; (incidents, products). Used by the data
    migrations, the command, and after bulk loads."""
    IncidentFacts.objects.all().delete()
    ids = list(Incident.objects.order_by("pk").values_list("pk", flat=True))
    for lo in range(0, len(ids), _BATCH):
        _facts_write(ids[lo : lo + _BATCH])
        if progress is not None:
            progress(f"facts: {min(lo + _BATCH, len(ids)):,} of {len(ids):,} incidents")
    products = list(Product.objects.order_by("pk").values_list("pk", flat=True))
    ImpactStretch.objects.all().delete()
    for product_id in products:
        windows = ImpactWindow.objects.filter(product_id=product_id).values_list(
            "level", "started_at", "ended_at"
        )
        ImpactStretch.objects.bulk_create(
            [
                ImpactStretch(product_id=product_id, severity=s.severity, started_at=s.start, ended_at=s.end)
                for s in stretches(windows)
            ],
            batch_size=_BATCH,
        )
    scope_facts.scope_rebuild(
        ids, ImpactStretch.objects.values_list("product_id", "severity", "started_at", "ended_at").iterator()
    )
    if progress is not None:
        progress(f"scope rows and month sums of {len(ids):,} incidents and {len(products):,} products")
    return len(ids), len(products)
