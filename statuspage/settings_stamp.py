"""Settings of the public-state stamp's sweep (edge/version.py, PendingBump).

Pulled into statuspage/settings.py at its end, which adds STAMP_BEAT_SCHEDULE to its
beat schedule.
"""

from __future__ import annotations

from statuspage.env import env_float

__all__ = ["PUBLIC_STATE_SWEEP_SECONDS", "STAMP_BEAT_SCHEDULE"]

# A public write whose stamp bump is not known to have landed this many seconds after its
# commit (the web process killed in between, the database or the cache unreachable then)
# gets one more bump, so pages rendered before the write are no longer served as fresh.
# Also how often the periodic worker looks.
PUBLIC_STATE_SWEEP_SECONDS = env_float("PUBLIC_STATE_SWEEP_SECONDS", 10.0)

STAMP_BEAT_SCHEDULE = {
    "edge-public-state-sweep": {
        "task": "edge.tasks.sweep_public_state",
        "schedule": PUBLIC_STATE_SWEEP_SECONDS,
    },
}
