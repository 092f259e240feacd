"""Beat tasks of subscriptions. Thin: each calls one idempotent service.

Neither retries: both run again on the next beat (every minute, every day) and pick up
whatever the failed run left, so a retry would only add load while something is down.
"""

from __future__ import annotations

from celery import shared_task

from subscriptions import action_items, maintenance


@shared_task(acks_late=True, ignore_result=True)
def maintenance_reminders() -> int:
    return maintenance.maintenance_remind_due()


@shared_task(acks_late=True, ignore_result=True)
def action_item_reminders() -> int:
    return action_items.action_item_reminders_send()
