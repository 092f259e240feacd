"""Half-open interval maths, table-driven, no database."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from incidents.intervals import Interval, clip_all, format_duration, merge, subtract, total
from tests.builders import utc


def at(hour: int, minute: int = 0) -> datetime:
    return utc(2026, 10, 8, hour, minute)


def iv(a: int, b: int) -> Interval:
    """An interval from hour a to hour b on a fixed day."""
    return Interval(at(a), at(b))


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


@pytest.mark.parametrize(
    ("given", "merged"),
    [
        ([], []),
        ([iv(1, 2)], [iv(1, 2)]),
        ([iv(1, 3), iv(2, 4)], [iv(1, 4)]),  # overlap
        ([iv(3, 4), iv(1, 2)], [iv(1, 2), iv(3, 4)]),  # unsorted, disjoint
        ([iv(1, 2), iv(2, 3)], [iv(1, 3)]),  # touching half-open intervals join
        ([iv(1, 5), iv(2, 3)], [iv(1, 5)]),  # contained
        ([iv(1, 1), iv(2, 3)], [iv(2, 3)]),  # empty dropped
        ([iv(1, 2), iv(1, 2)], [iv(1, 2)]),  # duplicates
        ([iv(5, 6), iv(1, 3), iv(2, 4), iv(4, 5)], [iv(1, 6)]),
    ],
)
def test_it_merges(given: list[Interval], merged: list[Interval]) -> None:
    assert merge(given) == merged


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], timedelta()),
        ([iv(1, 2), iv(1, 2)], hours(1)),  # a minute is down once, however many windows cover it
        ([iv(1, 3), iv(2, 4)], hours(3)),
        # The Cloud Storage incident: 12 h 30 min on 8 October, 5 h 41 min on 9 October.
        (
            [
                Interval(utc(2026, 10, 8, 11, 0), utc(2026, 10, 8, 23, 30)),
                Interval(utc(2026, 10, 9, 11, 5), utc(2026, 10, 9, 16, 46)),
            ],
            timedelta(hours=18, minutes=11),
        ),
    ],
)
def test_it_totals_the_union(given: list[Interval], expected: timedelta) -> None:
    assert total(given) == expected
    assert total(iter(given)) == expected  # any iterable, consumed once


@pytest.mark.parametrize(
    ("interval", "window", "expected"),
    [
        (iv(1, 5), (at(2), at(3)), iv(2, 3)),
        (iv(1, 5), (at(0), at(9)), iv(1, 5)),
        (iv(1, 5), (at(4), at(9)), iv(4, 5)),
        (iv(1, 5), (at(5), at(9)), None),  # touching only: no overlap
        (iv(1, 5), (at(6), at(9)), None),
        (iv(3, 3), (at(0), at(9)), None),
    ],
)
def test_it_clips(interval: Interval, window: tuple[datetime, datetime], expected: Interval | None) -> None:
    assert interval.clip(*window) == expected


def test_it_clips_many_to_a_month() -> None:
    september = (utc(2026, 9, 1), utc(2026, 10, 1))
    across = Interval(utc(2026, 8, 31, 23), utc(2026, 9, 1, 1))
    inside = Interval(utc(2026, 9, 15), utc(2026, 9, 15, 2))
    after = Interval(utc(2026, 10, 1), utc(2026, 10, 1, 1))

    assert clip_all([across, inside, after], *september) == [
        Interval(utc(2026, 9, 1), utc(2026, 9, 1, 1)),
        inside,
    ]


@pytest.mark.parametrize(
    ("given", "holes", "expected"),
    [
        ([iv(1, 5)], [], [iv(1, 5)]),
        ([iv(1, 5)], [iv(2, 3)], [iv(1, 2), iv(3, 5)]),
        ([iv(1, 5)], [iv(0, 9)], []),
        ([iv(1, 5)], [iv(0, 2), iv(4, 9)], [iv(2, 4)]),
        ([iv(1, 5)], [iv(5, 6)], [iv(1, 5)]),  # touching hole removes nothing
        ([iv(1, 3), iv(2, 6)], [iv(3, 4)], [iv(1, 3), iv(4, 6)]),  # input merged first
        ([iv(1, 2), iv(4, 6)], [iv(1, 2), iv(5, 9)], [iv(4, 5)]),
    ],
)
def test_it_subtracts(given: list[Interval], holes: list[Interval], expected: list[Interval]) -> None:
    assert subtract(given, holes) == expected


def test_it_refuses_naive_or_reversed_intervals() -> None:
    with pytest.raises(ValueError, match="aware"):
        Interval(datetime(2026, 1, 1), at(1))  # naive on purpose
    with pytest.raises(ValueError, match="before"):
        Interval(at(2), at(1))
    assert Interval(at(1), at(1)).duration == timedelta()


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(), "0 min"),
        (timedelta(seconds=59), "0 min"),
        (timedelta(minutes=45), "45 min"),
        (timedelta(minutes=90), "1 h 30 min"),
        (timedelta(hours=2), "2 h"),
        (timedelta(hours=4, minutes=53), "4 h 53 min"),
        (timedelta(hours=18, minutes=11), "18 h 11 min"),
        (timedelta(days=1), "1 d"),
        (timedelta(days=2, minutes=5), "2 d 5 min"),
        (timedelta(days=1, hours=3, minutes=7, seconds=59), "1 d 3 h 7 min"),
    ],
)
def test_it_formats_durations(delta: timedelta, text: str) -> None:
    assert format_duration(delta) == text


def test_subtract_matches_a_minute_by_minute_reference() -> None:
    # The one-pass subtract (issue 16) against the plainest possible model: sets of minutes.
    import itertools
    import random
    from datetime import UTC, datetime, timedelta

    from incidents.intervals import Interval, subtract

    base = datetime(2026, 1, 1, tzinfo=UTC)

    def iv(a: int, b: int) -> Interval:
        return Interval(base + timedelta(minutes=a), base + timedelta(minutes=b))

    def spans(rng: random.Random) -> list[tuple[int, int]]:
        out = []
        for _ in range(rng.randint(0, 8)):
            a = rng.randint(0, 200)
            out.append((a, a + rng.randint(0, 40)))
        return out

    rng = random.Random(16)
    for _ in range(500):
        ivs, holes = spans(rng), spans(rng)
        got = subtract([iv(*x) for x in ivs], [iv(*x) for x in holes])
        minutes = {
            m
            for g in got
            for m in range(
                int((g.start - base).total_seconds() // 60), int((g.end - base).total_seconds() // 60)
            )
        }
        expected = {m for a, b in ivs for m in range(a, b)} - {m for a, b in holes for m in range(a, b)}
        assert minutes == expected
        assert all(g.start < g.end for g in got)
        assert all(a.end <= b.start for a, b in itertools.pairwise(got))
