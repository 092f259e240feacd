"""Beat tasks of the incident domain. Thin: each calls one idempotent service.

No retries: the task runs again on the next beat (every minute) and picks up whatever a
failed run left, so a retry would only add load while something is down.
"""

from __future__ import annotations

from celery import shared_task

from incidents import maintenance


@shared_task(acks_late=True, ignore_result=True)
def maintenance_advance() -> dict[str, int]:
    result = maintenance.maintenance_advance()
    return {"started": result.started, "completed": result.completed}
