"""Settings of the public-state stamp's sweep (edge/version.py, PendingBump).

Pulled into statuspage/settings.py at its end: it adds the sweep to the beat schedule
defined there.
"""

from __future__ import annotations

from statuspage.env import env_float
from statuspage.settings import CELERY_BEAT_SCHEDULE

__all__ = ["PUBLIC_STATE_SWEEP_SECONDS"]

# A public write whose stamp bump is not known to have landed this many seconds after its
# commit (the web process killed in between, the database or the cache unreachable then)
# gets one more bump, so pages rendered before the write are no longer served as fresh.
# Also how often the periodic worker looks.
PUBLIC_STATE_SWEEP_SECONDS = env_float("PUBLIC_STATE_SWEEP_SECONDS", 10.0)

CELERY_BEAT_SCHEDULE["edge-public-state-sweep"] = {
    "task": "edge.tasks.sweep_public_state",
    "schedule": PUBLIC_STATE_SWEEP_SECONDS,
}
