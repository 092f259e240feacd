"""Celery tasks of the outbox. Thin: they take ids or destination keys and call one service.

No Celery-level retries anywhere: a failed attempt is recorded on its row (backoff,
budget, breaker) and the sweeper queues the next try. acks_late + reject_on_worker_lost
make a killed worker's task come back; the claim and its lease make the repeat harmless.
Emails, webhooks and periodic work run on separate queues (settings.CELERY_TASK_ROUTES).
"""

from __future__ import annotations

from celery import shared_task

from outbox import delivery, services


def _deliver(destination: str) -> int:
    services.outbox_kick_taken(destination=destination)
    return services.destination_deliver(destination=destination).sent


# One batch of emails over one SMTP session (queue "email").
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver_emails(destination: str = delivery.SMTP_DESTINATION) -> int:
    return _deliver(destination)


# One batch of webhooks to one host (queue "webhooks"): a hung mail server cannot hold it.
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver_webhooks(destination: str) -> int:
    return _deliver(destination)


# One message by id (kept for tasks already in the broker from before batch delivery).
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver_message(message_id: int) -> str:
    message = services.message_deliver(message_id=message_id)
    return "skipped" if message is None else message.state


# Runs every minute from beat (queue "periodic"); safe to run concurrently (claims and
# kick reservations decide).
@shared_task(acks_late=True, ignore_result=True)
def sweep_outbox() -> dict[str, int]:
    result = services.outbox_sweep()
    return {
        "requeued": result.requeued,
        "reclaimed": result.reclaimed,
        "failed": result.failed,
        "kicked": result.kicked,
    }
