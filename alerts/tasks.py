"""Beat tasks of alert intake. Thin: each calls one idempotent service.

No retries: each runs again on the next beat and picks up whatever a failed run left.
"""

from __future__ import annotations

from celery import shared_task

from alerts import services


@shared_task(acks_late=True, ignore_result=True)
def alerts_tick() -> dict[str, int]:
    result = services.alerts_tick()
    return {"resolved": result.resolved, "published": result.published}


@shared_task(acks_late=True, ignore_result=True)
def purge_payloads() -> int:
    return services.payloads_purge()
