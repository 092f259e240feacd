"""When something a product depends on degrades, suggest a draft to staff; never publish.

Our own products are watched through the incident events (`incidents.events`, joined in
`UpstreamConfig.ready()`); upstream components through the poller. Handlers run inside
the writer's transaction, so a suggestion commits or rolls back with the change that
caused it (docs/adr/0031-upstream-providers.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone

from incidents import services as incidents
from incidents.events import IncidentEvent
from incidents.selectors import OPERATIONAL, windows_counted_between, worst_level
from upstream.models import Dependency, IncidentCause, Suggestion, UpstreamComponent

# Planned work upstream is not an outage of ours: no suggestion for it.
_SUGGESTING = {"degraded_performance", "partial_outage", "major_outage"}
_PHRASE = {
    "degraded_performance": "degraded performance",
    "partial_outage": "partial outage",
    "major_outage": "major outage",
}


def target_level(dependency: Dependency, *, at: datetime) -> str:
    """The current level of what `dependency` depends on (counted, public impact only)."""
    if dependency.on_component is not None:
        return dependency.on_component.status
    assert dependency.on_product_id is not None
    windows = windows_counted_between(since=at, until=at).filter(product_id=dependency.on_product_id)
    location = dependency.on_location
    if location is not None:
        # The location itself, a zone in it, everywhere, or the area it is in (global).
        where = Q(location_id=location.pk) | Q(location__parent_id=location.pk) | Q(location__isnull=True)
        if location.parent_id is not None:
            where |= Q(location_id=location.parent_id)
        windows = windows.filter(where)
    return worst_level(windows.values_list("level", flat=True)) or OPERATIONAL


def suggestion_title(dependency: Dependency, level: str) -> str:
    """e.g. "Gmail may be affected: Cloud Storage (us-central1) is in partial outage"."""
    return f"{dependency.product.name} may be affected: {dependency.target_label} is in {_PHRASE[level]}"[
        :200
    ]


def _suggest(dependency: Dependency, level: str, now: datetime) -> None:
    title = suggestion_title(dependency, level)
    incident = incidents.incident_open(
        title=title,
        started_at=now,
        body=(
            f"{dependency.product.name} may be affected by a {_PHRASE[level]} of {dependency.target_label}, "
            "which it depends on. We are investigating."
        ),
        windows=[
            incidents.WindowSpec(
                product=dependency.product, location=None, level=dependency.level, started_at=now
            )
        ],
        is_public=False,
        internal_notes=(
            f"Suggested because {dependency.product.name} depends on {dependency.target_label}, "
            f"which is in {_PHRASE[level]} since {now:%Y-%m-%d %H:%M} UTC. Nothing is published until "
            "someone publishes this draft; delete it if the product is not affected."
        ),
    )
    Suggestion.objects.create(dependency=dependency, incident=incident, cause_level=level)
    IncidentCause.objects.get_or_create(
        incident=incident, label=dependency.target_label[:300], defaults={"dependency": dependency}
    )


def evaluate(dependencies: Iterable[Dependency], *, now: datetime) -> int:
    """Suggest a draft for each dependency whose target degraded and that has no open
    suggestion; close the open suggestion of each that recovered. Idempotent."""
    made = 0
    for dependency in dependencies:
        level = target_level(dependency, at=now)
        open_suggestion = dependency.suggestions.filter(closed_at__isnull=True).first()
        if level in _SUGGESTING and open_suggestion is None:
            _suggest(dependency, level, now)
            made += 1
        elif level not in _SUGGESTING and open_suggestion is not None:
            open_suggestion.closed_at = now
            open_suggestion.save(update_fields=["closed_at"])
    return made


def _related(queryset: QuerySet[Dependency]) -> list[Dependency]:
    return list(queryset.select_related("product", "on_product", "on_location", "on_component__provider"))


def on_incident_event(event: IncidentEvent) -> None:
    if event.kind != "impact_changed" or not event.products:
        return
    watching = Dependency.objects.filter(on_product_id__in=event.products)
    evaluate(_related(watching), now=timezone.now())


def components_changed(components: list[UpstreamComponent], *, now: datetime) -> None:
    if components:
        evaluate(_related(Dependency.objects.filter(on_component__in=components)), now=now)
