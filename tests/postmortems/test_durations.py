"""postmortems.durations: pure, table-driven, no database."""

from __future__ import annotations

from datetime import timedelta

import pytest

from postmortems import durations
from tests.builders import utc

START = utc(2026, 10, 8, 11, 0)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (None, None),
        (START, timedelta(0)),
        (utc(2026, 10, 8, 11, 50), timedelta(minutes=50)),
        (utc(2026, 10, 8, 10, 0), timedelta(0)),  # before the start: no time, never negative
    ],
)
def test_it_measures_from_the_start(moment, expected) -> None:  # type: ignore[no-untyped-def]
    assert durations.elapsed(START, moment) == expected


def test_it_gives_the_five_key_durations_in_the_one_format() -> None:
    m = durations.Milestones(
        impact_start=START,
        detected_at=utc(2026, 10, 8, 11, 50),
        declared_at=utc(2026, 10, 8, 12, 0),
        first_public_update_at=utc(2026, 10, 8, 12, 5),
        mitigated_at=utc(2026, 10, 8, 23, 30),
        resolved_at=None,
    )
    got = {d.key: d.text for d in durations.key_durations(m)}
    assert got == {
        "detection": "50 min",
        "declaration": "1 h",
        "first_public_update": "1 h 5 min",
        "mitigation": "12 h 30 min",
        "resolution": "",
    }
