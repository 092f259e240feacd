"""Tasks of the edge: the prerender after a public change (edge/prerender.py)."""

from __future__ import annotations

from celery import shared_task

from edge.prerender import prerender_all


# No retries: a page left out is rendered by its first visitor, and the next change
# queues a new run anyway. A run for an outdated version stops at once.
@shared_task(acks_late=True, ignore_result=True)
def prerender_pages(version: str) -> dict[str, int]:
    return prerender_all(version=version).counts
