"""Impact windows: what each product (and location) suffered, and when."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from core.text import check_time
from core.timezones import format_local
from incidents.models import ImpactWindow, Incident, Location, Product
from incidents.selectors import LEVEL_IMPACT, incident_shown_publicly
from incidents.services._common import (
    horizon_for,
    impact_changed,
    markdown_field,
    public_changed,
    require_aware,
    touch,
    validate_window,
)


@transaction.atomic
def impact_window_add(
    *,
    incident: Incident,
    product: Product,
    level: str,
    started_at: datetime,
    ended_at: datetime | None = None,
    location: Location | None = None,
    description: str = "",
    actor: User | None = None,
) -> ImpactWindow:
    roles.check(actor, "incident.edit")
    validate_window(
        level=level, started_at=started_at, ended_at=ended_at, product=product, incident_kind=incident.kind
    )
    description, description_html = markdown_field(description, field="description")
    # A window-less incident shows publicly; its first window on a staff-only product hides it.
    was_shown = incident_shown_publicly(incident)
    window = ImpactWindow.objects.create(
        incident=incident,
        product=product,
        location=location,
        level=level,
        started_at=started_at,
        ended_at=ended_at,
        description=description,
        description_html=description_html,
    )
    touch(incident, was_shown=was_shown)
    impact_changed(incident, was_shown=was_shown)
    return window


@transaction.atomic
def impact_window_close(
    *, window: ImpactWindow, ended_at: datetime | None = None, actor: User | None = None
) -> ImpactWindow:
    roles.check(actor, "incident.edit")
    window = ImpactWindow.objects.select_for_update().get(pk=window.pk)
    if window.ended_at is not None:
        raise ValidationError("This impact window is already closed.")
    check_time(ended_at, field="ended_at", future=horizon_for(window.incident.kind))
    ended_at = ended_at or timezone.now()
    if ended_at < window.started_at:
        raise ValidationError({"ended_at": "The end must not be before the start."})
    window.ended_at = ended_at
    window.save(update_fields=["ended_at"])
    touch(window.incident)
    impact_changed(window.incident)
    return window


@transaction.atomic
def impact_window_edit(
    *,
    window: ImpactWindow,
    product: Product,
    level: str,
    started_at: datetime,
    ended_at: datetime | None = None,
    location: Location | None = None,
    description: str = "",
    actor: User | None = None,
) -> ImpactWindow:
    """Correct an impact window (scope, level, times); the same rules as adding one."""
    roles.check(actor, "incident.edit")
    window = ImpactWindow.objects.select_for_update().get(pk=window.pk)
    validate_window(
        level=level,
        started_at=started_at,
        ended_at=ended_at,
        product=product,
        incident_kind=window.incident.kind,
    )
    description, window.description_html = markdown_field(description, field="description")
    moved_from, was = window.product_id, (window.started_at, window.ended_at)
    window.product = product
    window.location = location
    window.level = level
    window.started_at = started_at
    window.ended_at = ended_at
    window.description = description
    window.save(
        update_fields=[
            "product",
            "location",
            "level",
            "started_at",
            "ended_at",
            "description",
            "description_html",
        ]
    )
    touch(window.incident)
    impact_changed(window.incident, products={moved_from}, moved=[was])
    return window


@transaction.atomic
def impact_window_delete(*, window: ImpactWindow, actor: User | None = None) -> None:
    roles.check(actor, "incident.edit")
    incident = window.incident
    gone = ImpactWindow.objects.filter(pk=window.pk)
    extents = list(gone.values_list("started_at", "ended_at"))
    gone.delete()
    touch(incident)
    impact_changed(incident, products={window.product_id}, moved=extents)


# --- Levels set by a timeline update ------------------------------------------------------
# Staff say "Cloud Storage in us-central1 is now degraded"; the windows follow. A changed
# level closes the open window and opens one at the update's time, so the impact history,
# the bars, uptime and SLA credits all tell what staff said, minute by minute.

OPERATIONAL = "operational"
LEVEL_CHOICES = (OPERATIONAL, *ImpactWindow.Level.values)

_IMPACT_ORDER: list[str] = [
    Incident.Impact.NONE,
    Incident.Impact.MINOR,
    Incident.Impact.MAJOR,
    Incident.Impact.CRITICAL,
]


def impact_for_levels(levels: Iterable[str]) -> str:
    """The incident impact that the worst of these product levels implies."""
    return impact_worst(LEVEL_IMPACT[level] for level in levels if level in LEVEL_IMPACT)


def impact_worst(impacts: Iterable[str]) -> str:
    return max(impacts, key=_IMPACT_ORDER.index, default=Incident.Impact.NONE)


def impact_raise(*, incident: Incident, impact: str) -> bool:
    """Record `impact` if it is worse than the incident's recorded impact, which is the
    worst it reached: updates and level changes raise it and never lower it (only
    `incident_edit` corrects it). One conditional UPDATE, so two writers racing keep the
    worse of the two. Returns whether it changed."""
    if impact not in Incident.Impact.values:
        raise ValidationError({"impact": f"Unknown impact {impact!r}."})
    milder = _IMPACT_ORDER[: _IMPACT_ORDER.index(impact)]
    raised = Incident.objects.filter(pk=incident.pk, impact__in=milder).update(
        impact=impact, updated_at=timezone.now()
    )
    if raised:
        public_changed(incident)
    return bool(raised)


@dataclass(frozen=True)
class LevelSpec:
    """One product (optionally in one location) and its level from now on."""

    product: Product
    level: str
    location: Location | None = None


def _target(window: ImpactWindow) -> tuple[int, int | None]:
    return (window.product_id, window.location_id)


@transaction.atomic
def impact_levels_set(
    *, incident: Incident, levels: Sequence[LevelSpec], at: datetime, field: str = "display_at"
) -> int:
    """Set each product's (and location's) level as of `at`; returns how many changed.

    A product whose level is unchanged keeps its window; a changed level closes the open
    window at `at` and opens one there (none for `operational`). Closing at a time before
    the open window began would make a negative window, so it is refused, naming the time
    (errors are on `field`, the caller's name for `at`).
    """
    require_aware(at, field=field, past=True)
    seen: set[tuple[int, int | None]] = set()
    for spec in levels:
        if spec.level not in LEVEL_CHOICES:
            raise ValidationError({"level": f"Unknown level {spec.level!r}."})
        key = (spec.product.pk, spec.location.pk if spec.location else None)
        if key in seen:
            raise ValidationError({"level": f"{spec.product} is listed twice for the same location."})
        seen.add(key)
    # Row lock on the incident: two staff setting levels at once apply one after the other.
    Incident.objects.select_for_update().filter(pk=incident.pk).first()
    was_shown = incident_shown_publicly(incident)
    open_windows: dict[tuple[int, int | None], list[ImpactWindow]] = {}
    # Lock the windows' own rows only: a caller's queryset may join the nullable location,
    # and PostgreSQL refuses FOR UPDATE on the nullable side of an outer join.
    still_open = ImpactWindow.objects.filter(incident=incident, ended_at__isnull=True).order_by(
        "started_at", "pk"
    )
    for window in still_open.select_for_update(of=("self",)):
        open_windows.setdefault(_target(window), []).append(window)

    changed = 0
    for spec in levels:
        key = (spec.product.pk, spec.location.pk if spec.location else None)
        current = open_windows.get(key, [])
        current_levels = {w.level for w in current}
        if current_levels == ({spec.level} if spec.level != OPERATIONAL else set()):
            continue
        for window in current:
            if at < window.started_at:
                raise ValidationError(
                    {
                        field: f"{spec.product} has been {window.get_level_display().lower()} "
                        f"since {format_local(window.started_at)}; a change must come after that."
                    }
                )
            window.ended_at = at
            window.save(update_fields=["ended_at"])
        if spec.level != OPERATIONAL:
            ImpactWindow.objects.create(
                incident=incident,
                product=spec.product,
                location=spec.location,
                level=spec.level,
                started_at=at,
            )
        changed += 1
    if changed:
        touch(incident, was_shown=was_shown)
        impact_changed(incident, was_shown=was_shown)
    return changed
