"""Beat task of the upstream room. Thin and idempotent: a read claims its provider by
moving `next_poll_at` on, so two ticks never read one provider twice."""

from __future__ import annotations

from celery import shared_task

from upstream import services


@shared_task(acks_late=True, ignore_result=True)
def poll_providers() -> dict[str, int]:
    result = services.providers_poll()
    return {"read": result.read, "unchanged": result.unchanged, "failed": result.failed}
