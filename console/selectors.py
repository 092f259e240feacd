"""Reads of the console: what is open now, and what an incident looks like to staff.

Staff see everything (drafts and staff-only products included), so these read the
models directly rather than through the public selectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max, Prefetch, QuerySet

from alerts.models import Alert
from alerts.selectors import alerts_for_incident
from credits.models import CreditNotice
from edge.models import RenderProblem
from edge.render_problems import render_problems_open
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentNote, IncidentUpdate, Product
from incidents.selectors import (
    ACTIVE_MAINTENANCE_STATUSES,
    UNRESOLVED_STATUSES,
    ImpactTarget,
    incident_impact_targets,
    incident_notes,
    update_backdated,
)

Status = Incident.Status


@dataclass(frozen=True)
class OpenRow:
    incident: Incident
    age: timedelta
    last_update_at: datetime | None
    since_update: timedelta | None
    stale: bool
    open_windows: tuple[ImpactWindow, ...]


@dataclass(frozen=True)
class NowPage:
    active: tuple[OpenRow, ...]
    maintenance_active: tuple[OpenRow, ...]
    drafts: tuple[Incident, ...]
    upcoming: tuple[Incident, ...]
    resolved: tuple[Incident, ...]
    overdue: tuple[ActionItem, ...]
    credits_waiting: int
    stale_after: timedelta
    # Public pages and feed entries that failed to render (readers got the last good
    # copy or a degraded entry), newest first.
    render_problems: tuple[RenderProblem, ...] = ()


def stale_after() -> timedelta:
    return timedelta(minutes=settings.CONSOLE_UPDATE_STALE_MINUTES)


def _with_last_update(queryset: QuerySet[Incident]) -> QuerySet[Incident]:
    open_windows = ImpactWindow.objects.filter(ended_at__isnull=True).select_related("product", "location")
    return queryset.annotate(last_update_at=Max("updates__display_at")).prefetch_related(
        Prefetch("windows", queryset=open_windows, to_attr="open_windows")
    )


def _open_row(incident: Incident, *, now: datetime, limit: timedelta) -> OpenRow:
    last: datetime | None = getattr(incident, "last_update_at", None)
    since = now - last if last is not None else None
    return OpenRow(
        incident=incident,
        age=now - incident.started_at,
        last_update_at=last,
        since_update=since,
        stale=since is None or since > limit,
        open_windows=tuple(getattr(incident, "open_windows", ())),
    )


def now_page(*, now: datetime) -> NowPage:
    limit = stale_after()
    incidents = Incident.objects.filter(kind=Incident.Kind.INCIDENT)
    maintenance = Incident.objects.filter(kind=Incident.Kind.MAINTENANCE)
    active = _with_last_update(incidents.filter(status__in=UNRESOLVED_STATUSES, is_public=True))
    maintenance_active = _with_last_update(maintenance.filter(status__in=ACTIVE_MAINTENANCE_STATUSES))
    # Alert-fed drafts carry their alert group (integration, auto-publish time) along.
    drafts = (
        incidents.filter(is_public=False)
        .exclude(status__in=Incident.CLOSED_STATUSES)
        .select_related("alert_group__integration")
    )
    upcoming = maintenance.filter(status=Status.SCHEDULED, scheduled_until__gte=now).order_by("scheduled_for")
    resolved = incidents.filter(
        status__in=(Status.RESOLVED, Status.POSTMORTEM),
        resolved_at__gte=now - timedelta(days=settings.CONSOLE_RECENT_DAYS),
    ).order_by("-resolved_at")
    today = now.date()
    overdue = (
        ActionItem.objects.filter(status__in=ActionItem.OPEN_STATUSES, due_date__lt=today)
        .select_related("incident", "owner")
        .order_by("due_date", "priority", "id")
    )
    return NowPage(
        active=tuple(_open_row(i, now=now, limit=limit) for i in active.order_by("-started_at")),
        maintenance_active=tuple(
            _open_row(i, now=now, limit=limit) for i in maintenance_active.order_by("scheduled_for")
        ),
        drafts=tuple(drafts.order_by("-created_at")[:20]),
        upcoming=tuple(upcoming[:20]),
        resolved=tuple(resolved[:20]),
        overdue=tuple(overdue[:50]),
        credits_waiting=CreditNotice.objects.filter(state=CreditNotice.State.COMPUTED).count(),
        stale_after=limit,
        render_problems=tuple(render_problems_open()),
    )


@dataclass(frozen=True)
class ConsoleIncident:
    incident: Incident
    windows: tuple[ImpactWindow, ...]
    updates: tuple[IncidentUpdate, ...]
    targets: tuple[ImpactTarget, ...]
    action_items: tuple[ActionItem, ...]
    alerts: tuple[Alert, ...]
    # The updates shown earlier than they were posted: staff see both times.
    backdated: frozenset[int]
    # Staff notes of internal level changes (no public post), newest first.
    notes: tuple[IncidentNote, ...] = ()


def console_incident(*, incident: Incident) -> ConsoleIncident:
    windows = incident.windows.select_related("product", "location").order_by("started_at", "id")
    updates = tuple(incident.updates.select_related("author").order_by("-display_at", "-id"))
    return ConsoleIncident(
        incident=incident,
        windows=tuple(windows),
        updates=updates,
        backdated=frozenset(u.pk for u in updates if update_backdated(u)),
        targets=tuple(incident_impact_targets(incident=incident)),
        action_items=tuple(
            incident.action_items.select_related("owner").order_by("priority", "due_date", "id")
        ),
        alerts=tuple(alerts_for_incident(incident)),
        notes=tuple(incident_notes(incident)),
    )


def products_by_group() -> list[tuple[str, list[Product]]]:
    """Every product (staff-only ones too) under its group name, in page order."""
    groups: dict[str, list[Product]] = {}
    for product in Product.objects.select_related("group").order_by(
        "group__position", "group__name", "position", "name"
    ):
        groups.setdefault(product.group.name if product.group else "Other products", []).append(product)
    return list(groups.items())
