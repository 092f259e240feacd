"""Celery tasks of the outbox. Thin: they take ids and call one service."""

from __future__ import annotations

from celery import shared_task

from outbox import services


# No Celery-level retries: a failed attempt is recorded on the row and re-enqueued by the
# service with its own jittered countdown and budget. acks_late + reject_on_worker_lost
# make a killed worker's message come back; the claim makes the repeat harmless.
@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver_message(message_id: int) -> str:
    message = services.message_deliver(message_id=message_id)
    return "skipped" if message is None else message.state


# Runs every minute from beat; safe to run concurrently (claims decide who sends).
@shared_task(acks_late=True, ignore_result=True)
def sweep_outbox() -> dict[str, int]:
    result = services.outbox_sweep()
    return {"requeued": result.requeued, "reclaimed": result.reclaimed, "failed": result.failed}
