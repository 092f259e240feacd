"""/metrics: everything computed at scrape time by one custom collector, so nothing is
kept per process except the shared counters of edge/counters.py.
Design: docs/adr/0023-metrics.md; the series are listed in docs/operations.md.

Each group of readings is collected on its own: a group that fails (the database is down,
Redis does not answer) is left out and `statuspage_metrics_group_up{group}` says 0, so
the rest still reaches Prometheus.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime

from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from edge import counters, snapshots
from edge.cache_backend import breaker_states
from incidents.models import ImpactLevel
from incidents.selectors import OPERATIONAL
from ops import health, selectors
from outbox.models import CircuitState

logger = logging.getLogger(__name__)

PREFIX = "statuspage_"
COMPONENT_LEVELS = (OPERATIONAL, *ImpactLevel.values)

# The shared counters (edge/counters.py): name -> (help, label names).
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "page_cache_hits": ("Public pages answered from the page cache, all processes.", ("page",)),
    "page_cache_rebuilds": ("Public page rebuilds by outcome, all processes.", ("page", "outcome")),
    "outbox_deliveries": ("Delivery attempts by channel and outcome, all workers.", ("channel", "outcome")),
    "alert_payloads": ("Alert payloads received by integration kind and answer status.", ("kind", "status")),
}
HISTOGRAMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "outbox_delivery_latency_seconds": ("Seconds from a message's creation to its delivery.", ("channel",)),
}

Group = Callable[[datetime], Iterator[Metric]]


def _gauge(name: str, documentation: str, labels: tuple[str, ...]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, documentation, labels=list(labels))


def incidents_group(now: datetime) -> Iterator[Metric]:
    family = _gauge("incidents_open", "Unresolved public incidents by their impact now.", ("impact",))
    for impact, count in selectors.open_incidents_by_impact(now=now).items():
        family.add_metric([impact], count)
    yield family
    levels = _gauge("component_status", "1 for each public component's level now, 0 for the others.", ("component", "level"))  # fmt: skip
    for component, level in selectors.component_levels(now=now):
        for candidate in COMPONENT_LEVELS:
            levels.add_metric([component, candidate], 1 if candidate == level else 0)
    yield levels


def outbox_group(now: datetime) -> Iterator[Metric]:
    queue = _gauge("outbox_messages", "Messages to deliver or to review, by state and destination.", ("state", "channel", "destination"))  # fmt: skip
    for state, channel, destination, rows in selectors.outbox_queue():
        queue.add_metric([state, channel, destination], rows)
    yield queue
    oldest = _gauge(
        "outbox_oldest_pending_age_seconds", "Age of the oldest pending message.", ("channel", "purpose")
    )
    for channel, purpose, age in selectors.outbox_oldest_pending(now=now):
        oldest.add_metric([channel, purpose], age)
    yield oldest
    circuits = _gauge("outbox_destination_circuit", "1 for each destination's circuit state, 0 for the others.", ("destination", "state"))  # fmt: skip
    for destination, state in selectors.destination_circuits():
        for candidate in CircuitState.values:
            circuits.add_metric([destination, candidate], 1 if candidate == state else 0)
    yield circuits


def edge_group(now: datetime) -> Iterator[Metric]:
    breakers = _gauge(
        "cache_breaker_open", "1 while this process's breaker for a cache server is open.", ("server",)
    )
    for server, is_open in sorted(breaker_states().items()):
        breakers.add_metric([server], 1 if is_open else 0)
    yield breakers
    wall = now.timestamp()
    age = _gauge("snapshot_age_seconds", "Age of the page snapshot on disk (what nginx serves when the app is down).", ("snapshot",))  # fmt: skip
    for name, built_at in sorted(snapshots.snapshots_built().items()):
        age.add_metric([name], max(wall - built_at, 0.0))
    yield age


def render_problems_group(now: datetime) -> Iterator[Metric]:
    problems = _gauge("render_problems_open", "Public renders failing now, by kind.", ("kind",))
    failures = _gauge("render_problem_failures", "Failures counted on the open render problems.", ("kind",))
    for kind, (open_, counted) in selectors.render_problems_by_kind().items():
        problems.add_metric([kind], open_)
        failures.add_metric([kind], counted)
    yield problems
    yield failures


def counters_group(now: datetime) -> Iterator[Metric]:
    parsed = [(*counters.series_parse(series), value) for series, value in counters.counters_read().items()]
    for name, (documentation, label_names) in COUNTERS.items():
        family = CounterMetricFamily(PREFIX + name, documentation, labels=list(label_names))
        for series_name, labels, value in parsed:
            if series_name == name:
                family.add_metric([labels.get(label, "") for label in label_names], value)
        yield family
    for name, (documentation, label_names) in HISTOGRAMS.items():
        yield _histogram(name, documentation, label_names, parsed)


def _histogram(
    name: str,
    documentation: str,
    label_names: tuple[str, ...],
    parsed: list[tuple[str, dict[str, str], float]],
) -> HistogramMetricFamily:
    buckets: dict[tuple[str, ...], dict[str, float]] = {}
    sums: dict[tuple[str, ...], float] = {}
    for series_name, labels, value in parsed:
        key = tuple(labels.get(label, "") for label in label_names)
        if series_name == f"{name}_bucket":
            buckets.setdefault(key, {})[labels["le"]] = value
        elif series_name == f"{name}_sum":
            sums[key] = value
    family = HistogramMetricFamily(PREFIX + name, documentation, labels=list(label_names))
    for key, by_bound in sorted(buckets.items()):
        ordered = sorted(by_bound.items(), key=lambda item: float(item[0]))
        family.add_metric(list(key), buckets=ordered, sum_value=sums.get(key, 0.0))
    return family


def readiness_group(now: datetime) -> Iterator[Metric]:
    ready = _gauge("ready", "1 when the readiness check passes (as /readyz answers).", ("check",))
    for check, result in health.readiness().items():
        ready.add_metric([check], 1 if result == "ok" else 0)
    yield ready


GROUPS: dict[str, Group] = {
    "readiness": readiness_group,
    "incidents": incidents_group,
    "outbox": outbox_group,
    "edge": edge_group,
    "render_problems": render_problems_group,
    "counters": counters_group,
}


class StatusCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        up = _gauge("metrics_group_up", "1 when the group of readings could be collected.", ("group",))
        took = _gauge("metrics_group_seconds", "Seconds spent collecting the group.", ("group",))
        for name, group in GROUPS.items():
            started = time.monotonic()
            try:
                families = list(group(now))
            except Exception as exc:  # noqa: BLE001 - one group's failure must not hide the others
                logger.warning(
                    "metrics group %s could not be collected: %s: %s", name, type(exc).__name__, exc
                )
                families = []
                up.add_metric([name], 0)
            else:
                up.add_metric([name], 1)
            took.add_metric([name], time.monotonic() - started)
            yield from families
        yield up
        yield took


def exposition(accept: str) -> tuple[bytes, str]:
    """The text to answer with, in the format the scraper asked for (OpenMetrics when its
    Accept header names it, else Prometheus' text format 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
