"""The per-day summary gives exactly what every window gives (bars, grid, uptime, current
level), for histories written through the services: windows over midnight and over the
display zone's DST changes, open windows, windows ending or starting after now, several
levels and locations, drafts, published drafts, edits, deletions. The histories are
drawn from seeded generators: the same history on every run."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident, Location
from tests.builders import make_location, make_product, utc
from tests.incidents.days import assert_fresh, assert_same_as_reference, scheduled

pytestmark = pytest.mark.django_db

LEVELS = ImpactWindow.Level.values
LENGTHS = [
    None,
    timedelta(minutes=5),
    timedelta(minutes=50),
    timedelta(hours=7),
    timedelta(hours=30),
    timedelta(days=3),
]


class History:
    def __init__(self, rng: random.Random, now: datetime) -> None:
        self.rng, self.now = rng, now
        self.products = [make_product(f"Product {i}", position=i) for i in range(4)]
        self.products.append(make_product("Staff only", is_public=False))
        self.places: list[Location | None] = [
            None,
            make_location("us-central1"),
            make_location("europe-west1"),
        ]

    def moment(self, after: datetime) -> datetime:
        return min(self.now, after + timedelta(minutes=self.rng.randrange(0, 3 * 24 * 60)))

    def spec(self, start: datetime) -> services.WindowSpec:
        length = self.rng.choice(LENGTHS)
        return services.WindowSpec(
            product=self.rng.choice(self.products),
            level=self.rng.choice(LEVELS),
            started_at=start,
            ended_at=None if length is None else min(start + length, self.now),
            location=self.rng.choice(self.places),
        )

    def incident(self, n: int) -> Incident:
        start = self.now - timedelta(minutes=self.rng.randrange(0, 95 * 24 * 60))
        specs = [self.spec(self.moment(start) if k else start) for k in range(self.rng.randint(1, 3))]
        return services.incident_open(
            title=f"Incident {n}",
            impact=self.rng.choice(Incident.Impact.values),
            started_at=start,
            first_update_at=start,
            windows=specs,
            is_public=self.rng.random() > 0.2,
        )

    def change(self, incident: Incident) -> None:
        """One write on the incident, drawn at random; one the services refuse changes nothing."""
        found = Incident.objects.filter(pk=incident.pk).first()
        if found is None:
            return  # deleted by an earlier change
        incident = found
        windows = list(incident.windows.all())
        window = self.rng.choice(windows) if windows else None
        at = self.moment(incident.started_at)
        moves: list[Callable[[], object]] = [
            lambda: services.impact_levels_set(
                incident=incident,
                levels=[
                    services.LevelSpec(
                        product=self.rng.choice(self.products),
                        level=self.rng.choice([*LEVELS, "operational"]),
                        location=self.rng.choice(self.places),
                    )
                ],
                at=at,
            ),
            lambda: services.incident_resolve(incident=incident, resolved_at=at),
            lambda: services.impact_window_add(incident=incident, **vars(self.spec(at))),
            lambda: services.incident_edit(
                incident=incident, changes={"started_at": at - timedelta(hours=self.rng.randint(-5, 30))}
            ),
            lambda: services.incident_publish(incident=incident),
            lambda: services.incident_edit(incident=incident, changes={"is_public": False}),
            lambda: services.incident_delete(incident=incident),
        ]
        if window is not None:
            moves += [
                lambda: services.impact_window_close(window=window, ended_at=max(at, window.started_at)),
                lambda: services.impact_window_delete(window=window),
                lambda: services.impact_window_edit(
                    window=window,
                    product=self.rng.choice(self.products),
                    level=self.rng.choice(LEVELS),
                    started_at=window.started_at - timedelta(hours=self.rng.randint(-3, 26)),
                    ended_at=self.rng.choice([None, at, window.ended_at]),
                    location=self.rng.choice(self.places),
                ),
            ]
        with contextlib.suppress(ValidationError):
            self.rng.choice(moves)()

    def write(self, *, incidents: int = 24, changes: int = 60) -> None:
        made = [self.incident(n) for n in range(incidents)]
        for _ in range(changes):
            self.change(self.rng.choice(made))


def dst_night(zone: str, now: datetime) -> datetime:
    """The last midnight (local) before `now` after which the zone's offset changed that day."""
    tz = ZoneInfo(zone)
    day = now.astimezone(tz).date()
    for _ in range(120):
        day -= timedelta(days=1)
        start = datetime.combine(day, time.min, tzinfo=tz)
        if (start + timedelta(days=1)).utcoffset() != start.utcoffset():
            return start
    raise AssertionError("no DST change in the last 120 days")


CASES = [
    ("US/Pacific", utc(2026, 11, 2, 18), 11),  # summer time ended on 1 November
    ("US/Pacific", utc(2026, 3, 20, 18), 12),  # and began on 8 March
    ("Europe/Paris", utc(2026, 4, 10, 12), 13),  # began on 29 March
    ("Europe/Paris", utc(2026, 10, 27, 9), 14),  # ended on 25 October
]


@pytest.mark.parametrize(("zone", "now", "seed"), CASES)
def test_it_equals_every_window_for_random_histories(zone: str, now: datetime, seed: int) -> None:
    with override_settings(DISPLAY_TIME_ZONE=zone), freeze_time(now):
        history = History(random.Random(seed), now)
        night = dst_night(zone, now)
        gmail = history.products[0]
        # Over the night the clocks changed, and over the midnight before it.
        for start, hours in ((night + timedelta(minutes=30), 4), (night - timedelta(hours=2), 5)):
            services.incident_open(
                title="Over the change",
                started_at=start,
                first_update_at=start,
                windows=[
                    services.WindowSpec(
                        product=gmail,
                        level=ImpactWindow.Level.MAJOR_OUTAGE,
                        started_at=start,
                        ended_at=start + timedelta(hours=hours),
                    )
                ],
            )
        # Maintenance under way until after now, and one later on.
        scheduled(gmail, now - timedelta(hours=2), now + timedelta(hours=2))
        scheduled(history.products[1], now + timedelta(hours=1), now + timedelta(hours=3))
        history.write()
        assert_same_as_reference(now=now)
        assert_fresh()
    # Time passes without a write: open windows grow, windows that ended after now end.
    for later in (now + timedelta(hours=7), now + timedelta(days=1, hours=3), now + timedelta(days=4)):
        with override_settings(DISPLAY_TIME_ZONE=zone), freeze_time(later):
            assert_same_as_reference(now=later)
