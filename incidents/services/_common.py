"""What every incident service shares: time checks, window checks, the change stamp."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db.models import F
from django.utils import timezone

from core.text import CLOCK_SKEW, SCHEDULE_HORIZON, check_time, clean_text
from edge import version as public_cache
from incidents import daily, events
from incidents.history_counts import history_counts_refresh_incident
from incidents.markdown import render_for_storage
from incidents.models import ImpactWindow, Incident, Location, Product
from incidents.selectors import incident_shown_publicly


def require_aware(value: datetime | None, *, field: str, past: bool = False) -> None:
    """Aware, not before 1970, and not in the future (`past`) or not beyond the
    scheduling horizon (otherwise)."""
    check_time(value, field=field, future=CLOCK_SKEW if past else SCHEDULE_HORIZON)


def horizon_for(incident_kind: str) -> timedelta:
    """How far ahead an incident's own times may be: maintenance is planned ahead, an
    incident's start, detection and impact have already happened."""
    return SCHEDULE_HORIZON if incident_kind == Incident.Kind.MAINTENANCE else CLOCK_SKEW


def markdown_field(value: str | None, *, field: str, required: bool = False) -> tuple[str, str]:
    """Clean a Markdown source and render it for storage: (source, html).

    Rendering happens here, once, at write time; refusals (too long, too deep, too slow
    to render) are field errors like any other.
    """
    source = clean_text(value, field=field)
    if required and not source.strip():
        raise ValidationError({field: "This field is required."})
    return source, render_for_storage(source, field=field)


@dataclass(frozen=True)
class WindowSpec:
    """An impact window to create along with an incident."""

    product: Product
    level: str
    started_at: datetime
    ended_at: datetime | None = None
    location: Location | None = None
    description: str = ""


def validate_window(
    *,
    level: str,
    started_at: datetime,
    ended_at: datetime | None,
    product: Product | None,
    incident_kind: str = Incident.Kind.INCIDENT,
) -> None:
    if product is None:
        raise ValidationError({"product": "Choose the affected product."})
    if product.archived_at is not None:
        raise ValidationError({"product": f"{product.name} is archived: restore it to change impact on it."})
    if level not in ImpactWindow.Level.values:
        raise ValidationError({"level": f"Unknown impact level {level!r}."})
    if started_at is None:
        raise ValidationError({"started_at": "This field is required."})
    check_time(started_at, field="started_at", future=horizon_for(incident_kind))
    check_time(ended_at, field="ended_at", future=horizon_for(incident_kind))
    if ended_at is not None and ended_at < started_at:
        raise ValidationError({"ended_at": "The end must not be before the start."})


def public_changed(
    incident: Incident,
    *,
    was_public: bool = False,
    was_shown: bool = False,
    moved_from: datetime | None = None,
) -> None:
    """Mark a write to `incident` changed. Private pages always hear of it. The history's
    month counts (for its month and the one its start left, `moved_from`) follow unless it
    is a draft and was one; the public-state stamp (the live document, Last-Modified,
    ETags, every cached page) moves only when anonymous readers see the incident before
    (`was_shown`) or after the write (`incident_shown_publicly`): a draft or an incident
    on staff-only products must not move it (docs/adr/0011-drafts-count-once-published.md,
    docs/adr/0028-audience-pages.md)."""
    public_cache.private_state_changed()
    if incident.is_public or was_public:
        history_counts_refresh_incident(incident, moved_from=moved_from)
    if was_shown or incident_shown_publicly(incident):
        public_cache.public_state_changed()


def touch(incident: Incident, *, was_shown: bool = False) -> None:
    incident.save(update_fields=["updated_at"])
    public_changed(incident, was_shown=was_shown)


def products_changed(product_ids: Iterable[int]) -> None:
    """Move the public version of these products (their public row changed)."""
    ids = set(product_ids)
    if ids:
        Product.objects.filter(pk__in=ids).update(public_version=F("public_version") + 1)


def recorded(incident: Incident, *, products: Iterable[int] = ()) -> None:
    """Tell the rooms above that what staff figures read about `incident` changed (its
    times, visibility or windows, drafts included); `products`: whose windows did."""
    events.announce(kind="recorded", incident=incident, products=frozenset(products))


# A window's extent: [started_at, ended_at), ended_at None while open.
Extent = tuple[datetime, datetime | None]


def impact_changed(
    incident: Incident,
    *,
    products: Iterable[int] = (),
    was_public: bool = False,
    was_shown: bool = False,
    moved: Iterable[Extent] = (),
) -> None:
    """The one place every write that changes counted impact goes through: windows added,
    moved, closed or deleted, a draft published, an incident deleted. `products` names
    products that lost impact (a window moved away or deleted) and `moved` the extents
    windows had before (moved or deleted); the incident's current windows are added. A
    draft's windows count for nothing, so a draft that was one changes nothing public
    (docs/adr/0011-drafts-count-once-published.md); the public stamp moves as in
    `public_changed`. The per-day summary of every product
    touched is recounted here, over the days of those extents
    (docs/adr/0014-per-day-summary.md). Staff figures hear "recorded" about drafts
    too (docs/adr/0018-incident-facts.md)."""
    ids = set(products)
    lost = set(ids)
    extents = list(moved)
    if incident.pk is not None:
        for product_id, started_at, ended_at in ImpactWindow.objects.filter(
            incident_id=incident.pk
        ).values_list("product_id", "started_at", "ended_at"):
            ids.add(product_id)
            if ended_at is not None:  # an open window is in no stored day
                extents.append((started_at, ended_at))
    recorded(incident, products=ids)
    public_cache.private_state_changed()
    if not (incident.is_public or was_public):
        return
    products_changed(ids)
    daily.refresh(products=ids, spans=extents, now=timezone.now())
    events.announce(kind="impact_changed", incident=incident, products=frozenset(ids))
    # Shown before or after: a public product among those that lost impact means the
    # incident showed before the windows moved away.
    lost_public = incident.is_public and Product.objects.filter(pk__in=lost, is_public=True).exists()
    if was_shown or lost_public or incident_shown_publicly(incident):
        public_cache.public_state_changed()
