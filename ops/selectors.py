"""The readings /metrics reports, each one cheap query (ops/metrics.py turns them into
metric families). Design: docs/adr/0023-metrics.md."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Count, Min, Sum

from edge.models import RenderProblem
from incidents.models import Incident
from incidents.selectors import status_summary, unresolved_impacts_public
from outbox.models import Destination, MessageState, OutboundMessage

# Rows still to be delivered, or waiting for staff: the queue. Sent, failed and cancelled
# rows are history (their counts grow for ever and say nothing about now).
QUEUE_STATES = (MessageState.PENDING, MessageState.SENDING, MessageState.REVIEW)


def open_incidents_by_impact(*, now: datetime) -> dict[str, int]:
    """Unresolved public incidents by the impact they have now, every impact named."""
    counts = Counter(unresolved_impacts_public(now=now))
    return {impact: counts.get(impact, 0) for impact in Incident.Impact.values}


def component_levels(*, now: datetime) -> list[tuple[str, str]]:
    """(public component name, its level now) for each public component."""
    summary = status_summary(now=now, unresolved_impacts=[])
    return [(product.name, summary.statuses[product.pk]) for product in summary.products]


def outbox_queue() -> list[tuple[str, str, str, int]]:
    """(state, channel, destination, rows) for the rows in QUEUE_STATES."""
    rows = (
        OutboundMessage.objects.filter(state__in=QUEUE_STATES)
        .values_list("state", "channel", "destination")
        .annotate(rows=Count("id"))
        .order_by("state", "channel", "destination")
    )
    return [(state, channel, destination, rows) for state, channel, destination, rows in rows]


def outbox_oldest_pending(*, now: datetime) -> list[tuple[str, str, float]]:
    """(channel, purpose, age in seconds of the oldest pending message)."""
    rows = (
        OutboundMessage.objects.filter(state=MessageState.PENDING)
        .values_list("channel", "purpose")
        .annotate(oldest=Min("created_at"))
        .order_by("channel", "purpose")
    )
    return [(channel, purpose, max((now - oldest).total_seconds(), 0.0)) for channel, purpose, oldest in rows]


def destination_circuits() -> list[tuple[str, str]]:
    """(destination, circuit state) of every delivery destination the outbox has seen."""
    return list(Destination.objects.order_by("key").values_list("key", "state"))


def render_problems_by_kind() -> dict[str, tuple[int, int]]:
    """Kind -> (open problems, failures counted on them), every kind named."""
    rows = (
        RenderProblem.objects.values_list("kind").annotate(open=Count("id"), failures=Sum("count")).order_by()
    )
    found = {kind: (open_, failures or 0) for kind, open_, failures in rows}
    return {kind: found.get(kind, (0, 0)) for kind in RenderProblem.Kind.values}
