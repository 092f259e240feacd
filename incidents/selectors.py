"""Reads of the incident domain that carry a rule: visibility, rollup, durations.

Public selectors return only public incidents and public products; the access gate
`incident_get_for_user` is what every view and API that takes an incident id uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import (
    Case,
    Exists,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

from incidents import intervals
from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentNote,
    IncidentReport,
    IncidentUpdate,
    IncidentUpdateRevision,
    Location,
    Product,
)

Level = ImpactWindow.Level
OPERATIONAL = "operational"

# Worst first. A product's status is the worst level among its open windows.
LEVEL_SEVERITY: dict[str, int] = {
    OPERATIONAL: 0,
    Level.UNDER_MAINTENANCE: 1,
    Level.DEGRADED_PERFORMANCE: 2,
    Level.PARTIAL_OUTAGE: 3,
    Level.MAJOR_OUTAGE: 4,
}
# Lazy labels (gettext_lazy): each page renders them in its own language.
PRODUCT_STATUS_LABELS: dict[str, StrOrPromise] = {OPERATIONAL: _("Operational"), **dict(Level.choices)}

INDICATOR_SEVERITY = {"none": 0, "maintenance": 1, "minor": 2, "major": 3, "critical": 4}
# Plain English strings: they are also the Statuspage API's `description` and go into
# webhook payloads. Marked for translation (gettext_noop); the public pages translate
# them when they show them.
INDICATOR_DESCRIPTIONS = {
    "none": gettext_noop("All Systems Operational"),
    "maintenance": gettext_noop("Service Under Maintenance"),
    "minor": gettext_noop("Minor Service Outage"),
    "major": gettext_noop("Partial System Outage"),
    "critical": gettext_noop("Major System Outage"),
}
_LEVEL_INDICATOR = {
    OPERATIONAL: "none",
    Level.UNDER_MAINTENANCE: "maintenance",
    Level.DEGRADED_PERFORMANCE: "minor",
    Level.PARTIAL_OUTAGE: "major",
    Level.MAJOR_OUTAGE: "critical",
}
# The other way: the page indicator drawn with the icon of the product level it stands
# for (the status page's banner and header mark, the console's header mark, embeds).
INDICATOR_LEVEL = {indicator: str(level) for level, indicator in _LEVEL_INDICATOR.items()}


def worst_level(levels: Iterable[str]) -> str:
    return max(levels, key=LEVEL_SEVERITY.__getitem__, default=OPERATIONAL)


# --- Visibility ---------------------------------------------------------------------------


def products_public() -> QuerySet[Product]:
    return (
        Product.objects.filter(is_public=True, archived_at__isnull=True)
        .select_related("group")
        .order_by("group__position", "group__name", "position", "name")
    )


def incidents_public() -> QuerySet[Incident]:
    """Public incidents that touch at least one public product (or no product yet).

    An incident whose every window is on a staff-only product would leak that product's
    existence, so it stays off public pages.
    """
    # One scalar subquery per incident: NULL without windows, true with one on a public
    # product, false when all are on staff-only ones. Not `EXISTS(public) OR NOT
    # EXISTS(any)`: PostgreSQL runs EXISTS under OR as a hashed subplan that reads every
    # window of the history, where this one is an index probe per incident the read
    # actually walks (docs/adr/0019-bounded-public-reads.md).
    shown = (
        ImpactWindow.objects.filter(incident=OuterRef("pk"))
        .order_by("-product__is_public")
        .values("product__is_public")[:1]
    )
    return (
        Incident.objects.filter(is_public=True)
        .alias(shown=Coalesce(Subquery(shown), Value(True)))
        .filter(shown=True)
    )


def incident_shown_publicly(incident: Incident) -> bool:
    """Whether anonymous readers see `incident` now: the one rule (`incidents_public`) for
    one incident. Write paths move the public-state stamp only when this is true before or
    after the write, so ETags, Last-Modified and the live document never tell anyone that
    a draft or an incident on staff-only products changed (docs/adr/0028-audience-pages.md)."""
    if not incident.is_public or incident.pk is None:
        return False
    shown = (
        ImpactWindow.objects.filter(incident_id=incident.pk)
        .order_by("-product__is_public")
        .values_list("product__is_public", flat=True)
        .first()
    )
    return True if shown is None else bool(shown)


def incidents_touching(incidents: QuerySet[Incident], *, product: Product) -> QuerySet[Incident]:
    """`incidents` with a window on `product`, probed per incident (a scalar subquery on
    the window's incident index). An EXISTS would become a semi-join reading every window
    the product ever had; a read of the newest N walks back only until it has N."""
    touching = ImpactWindow.objects.filter(incident=OuterRef("pk"), product=product).values("pk")[:1]
    return incidents.alias(touches=Subquery(touching)).filter(touches__isnull=False)


def counted_window(prefix: str = "") -> Q:
    """The one rule for which impact counts (status, uptime, the grid, the public uptime
    report, SLA credits): windows of published incidents. A draft's windows count from
    the moment it is published, over their own [started_at, ended_at), so a draft
    published late counts its whole impact. `prefix` reaches windows through a relation
    ("windows__"). Design: docs/adr/0011-drafts-count-once-published.md."""
    return Q(**{f"{prefix}incident__is_public": True})


def windows_counted() -> QuerySet[ImpactWindow]:
    return ImpactWindow.objects.filter(counted_window())


def windows_overlapping(
    windows: QuerySet[ImpactWindow], *, since: datetime, until: datetime
) -> QuerySet[ImpactWindow]:
    """`windows` that have started by `until` and not ended by `since`: two ranges of an
    index on `ended_at` (open, or ended after `since`; the (product, ended_at) one for a
    product), so a read of the last 90 days walks those days' windows, not every window
    ever started."""
    return windows.filter(Q(ended_at__isnull=True) | Q(ended_at__gt=since), started_at__lte=until)


def windows_counted_between(*, since: datetime, until: datetime) -> QuerySet[ImpactWindow]:
    """Counted windows (`counted_window`) overlapping [since, until], read in bounded
    time whatever the length of the history. The incident's flag is probed per window
    (a scalar subquery on its primary key): as a join, PostgreSQL hashes the whole
    incident table to keep a few dozen windows (docs/adr/0019-bounded-public-reads.md)."""
    counted = Incident.objects.filter(pk=OuterRef("incident_id")).values("is_public")[:1]
    probed = ImpactWindow.objects.alias(counted=Subquery(counted)).filter(counted=True)
    return windows_overlapping(probed, since=since, until=until)


def public_windows_prefetch(prefix: str = "") -> Prefetch:
    return Prefetch(
        f"{prefix}windows",
        queryset=ImpactWindow.objects.filter(product__is_public=True).select_related("product", "location"),
    )


def incident_get_for_user(*, public_id: str, user: Any) -> Incident:
    """The access gate for one incident: staff see everything, everyone else only public."""
    queryset = Incident.objects.all() if getattr(user, "is_staff", False) else incidents_public()
    try:
        return queryset.get(public_id=public_id)
    except Incident.DoesNotExist:
        raise Http404("No such incident.") from None


def incident_windows_public(*, incident: Incident) -> list[ImpactWindow]:
    """The windows the public page shows, to everyone: those on public products."""
    windows = incident.windows.filter(product__is_public=True)
    return list(windows.select_related("product", "location").order_by("started_at", "id"))


def incident_updates(*, incident: Incident) -> list[IncidentUpdate]:
    return list(incident.updates.order_by("-display_at", "-id"))


# An entry shown more than this before it was posted was backdated by staff; closer than
# that is the time it took to write and send (docs/adr/0013-posted-and-shown-times.md).
BACKDATE_TOLERANCE = timedelta(seconds=60)


def update_backdated(update: IncidentUpdate) -> bool:
    """Whether staff showed this entry earlier than it was posted (staff screens then
    show both times)."""
    return update.display_at < update.created_at - BACKDATE_TOLERANCE


def update_revisions(update: IncidentUpdate) -> list[IncidentUpdateRevision]:
    """The earlier texts of a corrected update, oldest first (staff only)."""
    return list(update.revisions.select_related("edited_by").order_by("edited_at", "id"))


def incident_notes(incident: Incident) -> list[IncidentNote]:
    """Staff-only notes (such as why levels changed without a public update), newest first."""
    return list(incident.notes.select_related("author").order_by("-at", "-id"))


# --- Status rollup ----------------------------------------------------------------------


def product_statuses(
    *,
    at: datetime | None = None,
    products: Iterable[Product] | None = None,
    include_private: bool = False,
) -> dict[int, str]:
    """Current status of each product: the worst window open at `at`.

    One query, whatever the number of products: windows that contain `at`. Windows of
    drafts count only with `include_private` (the console): otherwise a draft would show
    on the public page as a public product's status.
    """
    at = at or timezone.now()
    if include_private:
        windows = windows_overlapping(ImpactWindow.objects.all(), since=at, until=at)
    else:
        windows = windows_counted_between(since=at, until=at)
    if products is not None:
        windows = windows.filter(product__in=list(products))
    statuses: dict[int, str] = {}
    for product_id, level in windows.values_list("product_id", "level"):
        statuses[product_id] = worst_level([statuses.get(product_id, OPERATIONAL), level])
    return statuses


@dataclass(frozen=True)
class PageStatus:
    indicator: str
    description: str

    @property
    def level(self) -> str:
        return INDICATOR_LEVEL[self.indicator]


def page_status(*, statuses: Iterable[str], unresolved_impacts: Iterable[str] = ()) -> PageStatus:
    """The overall banner, Statuspage style, from product statuses and open incidents."""
    indicators = [_LEVEL_INDICATOR[s] for s in statuses]
    indicators += [i for i in unresolved_impacts if i != Incident.Impact.NONE]
    indicator = max(indicators, key=INDICATOR_SEVERITY.__getitem__, default="none")
    return PageStatus(indicator=indicator, description=INDICATOR_DESCRIPTIONS[indicator])


# The one definition of "unresolved": an incident (not a maintenance) not yet closed.
UNRESOLVED_STATUSES = tuple(s for s in Incident.INCIDENT_STATUSES if s not in Incident.CLOSED_STATUSES)
ACTIVE_MAINTENANCE_STATUSES = (Incident.Status.IN_PROGRESS, Incident.Status.VERIFYING)


def incidents_unresolved_public() -> QuerySet[Incident]:
    return incidents_public().filter(kind=Incident.Kind.INCIDENT, status__in=UNRESOLVED_STATUSES)


# The incident impact a product level implies (the Statuspage pairing).
LEVEL_IMPACT: dict[str, str] = {
    OPERATIONAL: Incident.Impact.NONE,
    Level.UNDER_MAINTENANCE: Incident.Impact.NONE,
    Level.DEGRADED_PERFORMANCE: Incident.Impact.MINOR,
    Level.PARTIAL_OUTAGE: Incident.Impact.MAJOR,
    Level.MAJOR_OUTAGE: Incident.Impact.CRITICAL,
}


def _impact_now(*, recorded: str, has_windows: bool, worst_open: str | None) -> str:
    if not has_windows:
        return recorded
    return LEVEL_IMPACT[worst_open or OPERATIONAL]


def incident_impact_now(*, incident: Incident, windows: Iterable[ImpactWindow], now: datetime) -> str:
    """What an open incident adds to the banner now. `Incident.impact` is the worst the
    incident reached (what a resolved incident shows); while open, the banner follows
    the current levels of its windows on public products, so lowering them shows the
    recovery. An incident without windows on public products counts its recorded impact.
    `windows` are the incident's windows on public products (prefetched by the caller)."""
    window_list = list(windows)
    open_levels = [
        w.level for w in window_list if w.started_at <= now and (w.ended_at is None or w.ended_at > now)
    ]
    return _impact_now(
        recorded=incident.impact,
        has_windows=bool(window_list),
        worst_open=worst_level(open_levels) if open_levels else None,
    )


def unresolved_impacts_public(*, now: datetime) -> list[str]:
    """`incident_impact_now` of every unresolved public incident, in one query."""
    public_windows = ImpactWindow.objects.filter(incident=OuterRef("pk"), product__is_public=True)
    open_now = public_windows.filter(Q(ended_at__isnull=True) | Q(ended_at__gt=now), started_at__lte=now)
    severity = Case(
        *(When(level=level, then=Value(rank)) for level, rank in LEVEL_SEVERITY.items()),
        default=Value(0),
        output_field=IntegerField(),
    )
    rows = incidents_unresolved_public().annotate(
        has_windows=Exists(public_windows),
        worst_open=Subquery(open_now.annotate(rank=severity).order_by("-rank").values("level")[:1]),
    )
    return [
        _impact_now(recorded=impact, has_windows=has_windows, worst_open=worst_open)
        for impact, has_windows, worst_open in rows.values_list("impact", "has_windows", "worst_open")
    ]


def maintenance_active_public() -> QuerySet[Incident]:
    return incidents_public().filter(kind=Incident.Kind.MAINTENANCE, status__in=ACTIVE_MAINTENANCE_STATUSES)


@dataclass(frozen=True)
class StatusSummary:
    """What every status surface says first: the page indicator and each product's level."""

    banner: PageStatus
    products: tuple[Product, ...]
    statuses: dict[int, str]  # product pk -> level, every public product present
    unresolved_impacts: tuple[str, ...]


def status_summary(
    *,
    now: datetime,
    products: Sequence[Product] | None = None,
    statuses: Mapping[int, str] | None = None,
    unresolved_impacts: Sequence[str] | None = None,
) -> StatusSummary:
    """The rollup the page, v1 and v2 all show. A caller that has already fetched the
    products, their current levels or the open incidents passes them in, so the page's
    query count stays what it was; anything not passed is read here."""
    products = list(products_public()) if products is None else list(products)
    if statuses is None:
        statuses = product_statuses(at=now, products=products)
    levels = {p.pk: statuses.get(p.pk, OPERATIONAL) for p in products}
    if unresolved_impacts is None:
        unresolved_impacts = unresolved_impacts_public(now=now)
    return StatusSummary(
        banner=page_status(statuses=levels.values(), unresolved_impacts=unresolved_impacts),
        products=tuple(products),
        statuses=levels,
        unresolved_impacts=tuple(unresolved_impacts),
    )


# --- Durations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProductDuration:
    product: Product
    duration: timedelta
    locations: tuple[Location, ...]


@dataclass(frozen=True)
class IncidentDurations:
    total: timedelta
    per_product: tuple[ProductDuration, ...]
    ongoing: bool


def window_interval(window: ImpactWindow, *, now: datetime) -> intervals.Interval:
    end = window.ended_at or max(now, window.started_at)
    return intervals.Interval(window.started_at, end)


def incident_durations(
    *, incident: Incident, windows: Iterable[ImpactWindow] | None = None, now: datetime | None = None
) -> IncidentDurations:
    """How long the incident lasted, per product and in total.

    The total is the union of all windows (a recurrence adds its own stretch; overlapping
    windows count once). Without windows it is the incident's own start to resolution.
    """
    now = now or timezone.now()
    window_list = list(
        windows if windows is not None else incident.windows.select_related("product", "location")
    )
    if not window_list:
        end = incident.resolved_at or max(now, incident.started_at)
        return IncidentDurations(
            total=end - incident.started_at, per_product=(), ongoing=incident.resolved_at is None
        )

    by_product: dict[int, list[ImpactWindow]] = {}
    for window in window_list:
        by_product.setdefault(window.product_id, []).append(window)
    per_product = []
    for product_windows in by_product.values():
        locations: dict[int, Location] = {}
        for w in product_windows:
            if w.location is not None:
                locations.setdefault(w.location.pk, w.location)
        per_product.append(
            ProductDuration(
                product=product_windows[0].product,
                duration=intervals.total(window_interval(w, now=now) for w in product_windows),
                locations=tuple(locations.values()),
            )
        )
    per_product.sort(key=lambda pd: (pd.product.position, pd.product.name))
    return IncidentDurations(
        total=intervals.total(window_interval(w, now=now) for w in window_list),
        per_product=tuple(per_product),
        ongoing=any(w.ended_at is None for w in window_list),
    )


def maintenance_upcoming_public(*, now: datetime) -> QuerySet[Incident]:
    """Public maintenance that has not ended yet, soonest first (the iCalendar feed)."""
    return (
        incidents_public()
        .filter(
            kind=Incident.Kind.MAINTENANCE,
            status__in=[Incident.Status.SCHEDULED, Incident.Status.IN_PROGRESS, Incident.Status.VERIFYING],
            scheduled_until__gte=now,
        )
        .prefetch_related("windows__product", "windows__location")
        .order_by("scheduled_for", "id")
    )


def action_items_open() -> QuerySet[ActionItem]:
    """Open and in-progress items across incidents, overdue and soonest due first."""
    return (
        ActionItem.objects.filter(status__in=ActionItem.OPEN_STATUSES)
        .select_related("incident", "owner")
        .order_by("due_date", "priority", "id")
    )


def action_items_due_for_reminder(*, today: date, within_days: int) -> QuerySet[ActionItem]:
    """Open items with an owner who has an address, due by `today + within_days`."""
    return (
        action_items_open()
        .filter(due_date__isnull=False, due_date__lte=today + timedelta(days=within_days))
        .filter(owner__isnull=False, owner__is_active=True)
        .exclude(owner__email="")
    )


def action_items_public(*, incident: Incident, report: IncidentReport | None) -> list[ActionItem]:
    """What a published report lists: public items only, never before publication."""
    if report is None or not report.is_published:
        return []
    return list(incident.action_items.filter(is_public=True).order_by("priority", "due_date", "id"))


# --- What an incident touches, for the staff console -----------------------------------


@dataclass(frozen=True)
class ImpactTarget:
    """A product (optionally in one location) an incident has touched, and its level now."""

    product: Product
    location: Location | None
    level: str

    @property
    def label(self) -> str:
        return str(PRODUCT_STATUS_LABELS.get(self.level, self.level))


def incident_impact_targets(*, incident: Incident) -> list[ImpactTarget]:
    """Every (product, location) with a window on the incident, at its open level or
    operational, in catalogue order: the rows of a console update."""
    targets: dict[tuple[int, int | None], ImpactTarget] = {}
    windows = incident.windows.select_related("product__group", "location").order_by("started_at", "id")
    for window in windows:
        key = (window.product_id, window.location_id)
        previous = targets.get(key)
        level = previous.level if previous else OPERATIONAL
        if window.ended_at is None:
            level = worst_level([level, window.level])
        targets[key] = ImpactTarget(product=window.product, location=window.location, level=level)
    return sorted(
        targets.values(),
        key=lambda t: (
            t.product.group.position if t.product.group else -1,
            t.product.position,
            t.product.name,
            t.location.name if t.location else "",
        ),
    )
