"""Beat task of credits: compute the month that just ended, for review (docs/credits.md).

No retries: the service does nothing until the month has ended everywhere and nothing
once it has been computed since, so the next beat (or `run_periodic` at start-up) simply
runs it again; a retry would only add load while the database is down.
"""

from __future__ import annotations

from celery import shared_task

from credits import services


@shared_task(acks_late=True, ignore_result=True)
def compute_closed_month() -> str:
    summary = services.credits_compute_closed_month()
    if summary is None:
        return "nothing to compute"
    return f"{summary.period}: {len(summary.notice_ids)} notice(s) for review"
