"""Reads for subscriptions, maintenance and action items."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.db.models import QuerySet

from incidents.models import ActionItem, Incident
from incidents.selectors import incidents_public
from subscriptions.models import Subscriber
from subscriptions.tokens import Purpose, read_token


def subscriber_from_token(*, token: str, purpose: Purpose) -> Subscriber | None:
    """The subscriber a signed link names, or None when it no longer exists.

    Raises TokenInvalid / TokenExpired for a link we did not sign for this purpose.
    """
    value = read_token(token, purpose)
    return Subscriber.objects.prefetch_related("products").filter(token=value).first()


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


def action_items_public(*, incident: Incident) -> list[ActionItem]:
    """What a published report lists: public items only, never before publication."""
    report = getattr(incident, "report", None)
    if report is None or not report.is_published:
        return []
    return list(incident.action_items.filter(is_public=True).order_by("priority", "due_date", "id"))
