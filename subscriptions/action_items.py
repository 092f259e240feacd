"""Follow-up on postmortem action items: the owners' daily reminder."""

from __future__ import annotations

import logging
from datetime import date

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.timezones import display_zone
from incidents import selectors
from subscriptions import emails

logger = logging.getLogger(__name__)


def today_local() -> date:
    """Today in the display zone: "due today" means the owner's working day, not UTC's."""
    return timezone.now().astimezone(display_zone()).date()


def action_item_reminders_send(*, today: date | None = None) -> int:
    """Queue one reminder per open item that is overdue or due soon. Once per item per day."""
    today = today or today_local()
    items = selectors.action_items_due_for_reminder(
        today=today, within_days=settings.ACTION_ITEM_REMINDER_DAYS
    )
    queued = 0
    for item in items:
        assert item.due_date is not None and item.owner is not None  # filtered by the selector
        # One transaction per item: a bad address on one item does not stop the others.
        try:
            with transaction.atomic():
                emails.send_action_item_reminder(item=item, today=today, overdue=item.due_date < today)
        except ValidationError:
            logger.exception("could not queue the reminder for action item %s", item.pk)
            continue
        queued += 1
    return queued
