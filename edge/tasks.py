"""Tasks of the edge: the prerender after a public change (edge/prerender.py), and the
sweep of public-state bumps lost after their write committed (edge/version.py)."""

from __future__ import annotations

from celery import shared_task

from edge.prerender import prerender_all


# No retries: a page left out is rendered by its first visitor, and the next change
# queues a new run anyway. A run for an outdated version stops at once.
@shared_task(acks_late=True, ignore_result=True)
def prerender_pages(version: str) -> dict[str, int]:
    return prerender_all(version=version).counts


# Idempotent: a second run finds the rows the first cleared gone, or bumps once more.
@shared_task(ignore_result=True)
def sweep_public_state() -> int:
    from django.conf import settings

    from edge.version import sweep_pending_bumps

    return sweep_pending_bumps(older_than=settings.PUBLIC_STATE_SWEEP_SECONDS)
