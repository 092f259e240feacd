"""Beat tasks of subscriptions. Thin: each calls one idempotent service.

Neither retries: both run again on the next beat (every minute, every day) and pick up
whatever the failed run left, so a retry would only add load while something is down.
"""

from __future__ import annotations

from celery import shared_task

from subscriptions import action_items, components, maintenance, notifications


@shared_task(acks_late=True, ignore_result=True)
def maintenance_reminders() -> int:
    # The minute tick: reminders, and the component levels that move with the clock alone
    # (a maintenance window starting or ending) for Statuspage-format webhooks.
    components.component_levels_sync()
    return maintenance.maintenance_remind_due()


@shared_task(acks_late=True, ignore_result=True)
def action_item_reminders() -> int:
    return action_items.action_item_reminders_send()


# One chunk of an incident event's subscribers; it queues the next chunk itself. No
# retries: a lost or failed chunk is picked up by notification_events_resume (every
# sweep interval), and a repeated chunk queues nothing new (unique keys).
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def expand_notification_event(event_id: int) -> bool:
    return notifications.notification_event_expand(event_id=event_id)


@shared_task(acks_late=True, ignore_result=True)
def notification_events_resume() -> int:
    return notifications.notification_events_resume()
