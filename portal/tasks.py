"""Tasks of the portal room. Thin: each calls one idempotent service."""

from __future__ import annotations

from celery import shared_task

from portal import page_notifications


# One chunk of a page event's subscribers; it queues the next chunk itself. No retries:
# a lost chunk is picked up by the resume sweep, a repeated one queues nothing new.
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def expand_page_event(event_id: int) -> bool:
    return page_notifications.page_event_expand(event_id=event_id)
