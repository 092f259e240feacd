"""Key durations of an incident, from the start of impact: to detection, to declaration,
to the first public update, to mitigation, to resolution. Pure functions (no ORM): the
report, the public page and insights all take their figures from here, shown in the one
duration format (`incidents.intervals.format_duration`). Design: docs/adr/0020-timeline.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from incidents.intervals import format_duration


def elapsed(start: datetime, moment: datetime | None) -> timedelta | None:
    """How long after `start` `moment` came; None when it has not happened. A moment
    recorded before the start (a backdated start) counts as no time, never negative."""
    if moment is None:
        return None
    return max(moment - start, timedelta(0))


@dataclass(frozen=True)
class Milestones:
    """The moments the durations run between; all aware, all but `impact_start` optional."""

    impact_start: datetime
    detected_at: datetime | None = None
    declared_at: datetime | None = None
    first_public_update_at: datetime | None = None
    mitigated_at: datetime | None = None
    resolved_at: datetime | None = None


# (key, label) in the order the report shows them; the labels are msgids (translated where shown).
KEYS: tuple[tuple[str, str], ...] = (
    ("detection", "Impact start to detection"),
    ("declaration", "Impact start to declaration"),
    ("first_public_update", "Impact start to first public update"),
    ("mitigation", "Impact start to mitigation"),
    ("resolution", "Impact start to resolution"),
)


@dataclass(frozen=True)
class KeyDuration:
    key: str
    label: str
    value: timedelta | None

    @property
    def text(self) -> str:
        return "" if self.value is None else format_duration(self.value)


def time_to_detect(m: Milestones) -> timedelta | None:
    return elapsed(m.impact_start, m.detected_at)


def time_to_declare(m: Milestones) -> timedelta | None:
    return elapsed(m.impact_start, m.declared_at)


def time_to_first_public_update(m: Milestones) -> timedelta | None:
    return elapsed(m.impact_start, m.first_public_update_at)


def time_to_mitigate(m: Milestones) -> timedelta | None:
    return elapsed(m.impact_start, m.mitigated_at)


def time_to_resolve(m: Milestones) -> timedelta | None:
    return elapsed(m.impact_start, m.resolved_at)


_FUNCTIONS = {
    "detection": time_to_detect,
    "declaration": time_to_declare,
    "first_public_update": time_to_first_public_update,
    "mitigation": time_to_mitigate,
    "resolution": time_to_resolve,
}


def key_durations(m: Milestones) -> tuple[KeyDuration, ...]:
    return tuple(KeyDuration(key=key, label=label, value=_FUNCTIONS[key](m)) for key, label in KEYS)
