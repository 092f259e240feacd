"""Beat tasks of the API room. Thin: each calls one idempotent service."""

from __future__ import annotations

from celery import shared_task

from api import services


# No retries: the next hourly beat deletes whatever this run left.
@shared_task(acks_late=True, ignore_result=True)
def sweep_idempotency_records() -> int:
    return services.idempotency_sweep()
