"""Each write that changes counted impact keeps the per-day summary fresh: its rows after
the write are what a recount from scratch gives, and say what the write did. Days are
in the display zone (US/Pacific in the tests)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident, Product, ProductDay
from tests.builders import make_incident, make_product, utc
from tests.incidents.days import assert_fresh, assert_same_as_reference, scheduled

pytestmark = pytest.mark.django_db
Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20)


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with freeze_time(NOW):
        yield


def days(product: Product) -> dict[date, tuple[str, timedelta, list[str]]]:
    """Each stored day of the product: its level, its time at major outage, its incidents."""
    return {
        d.day: (d.level, d.major_outage, [i.incident.title for i in d.incidents.order_by("rank")])
        for d in ProductDay.objects.filter(product=product)
    }


def outage(product: Product, start: datetime, end: datetime | None = None, **kw: object) -> Incident:
    return make_incident(product=product, start=start, end=end, level=Level.MAJOR_OUTAGE, **kw)  # type: ignore[arg-type]


def test_it_counts_a_declared_window_once_it_ends_and_splits_it_at_local_midnight() -> None:
    gmail = make_product("Gmail")
    # 23:00 to 01:30 Pacific (07:00 to 09:30 UTC): two local days.
    incident = outage(gmail, utc(2026, 11, 20, 7), title="Gmail down")
    assert days(gmail) == {}  # open: worked out when read
    services.incident_resolve(incident=incident, resolved_at=utc(2026, 11, 20, 9, 30))
    assert days(gmail) == {
        date(2026, 11, 19): (Level.MAJOR_OUTAGE, timedelta(hours=1), ["Gmail down"]),
        date(2026, 11, 20): (Level.MAJOR_OUTAGE, timedelta(hours=1, minutes=30), ["Gmail down"]),
    }
    assert_fresh()


def test_it_follows_levels_set_by_updates() -> None:
    gmail = make_product("Gmail")
    incident = make_incident(product=gmail, start=utc(2026, 11, 20, 18), level=Level.DEGRADED_PERFORMANCE)
    services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level=Level.MAJOR_OUTAGE)],
        at=utc(2026, 11, 20, 19),
    )
    [(level, major, _)] = days(gmail).values()
    assert (level, major) == (Level.DEGRADED_PERFORMANCE, timedelta(0))  # the major window is open
    services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gmail, level=services.OPERATIONAL)],
        at=utc(2026, 11, 20, 19, 45),
    )
    assert days(gmail)[date(2026, 11, 20)][:2] == (Level.MAJOR_OUTAGE, timedelta(minutes=45))
    assert_fresh()


def test_windows_added_closed_and_deleted() -> None:
    gmail = make_product("Gmail")
    incident = outage(gmail, utc(2026, 11, 20, 18), utc(2026, 11, 20, 19))
    added = services.impact_window_add(
        incident=incident, product=gmail, level=Level.MAJOR_OUTAGE, started_at=utc(2026, 11, 22, 18)
    )
    assert set(days(gmail)) == {date(2026, 11, 20)}
    services.impact_window_close(window=added, ended_at=utc(2026, 11, 22, 20))
    assert days(gmail)[date(2026, 11, 22)][1] == timedelta(hours=2)
    services.impact_window_delete(window=added)
    assert set(days(gmail)) == {date(2026, 11, 20)}
    assert_fresh()


def test_a_window_moved_to_another_product_and_day_leaves_nothing_behind() -> None:
    gmail, drive = make_product("Gmail"), make_product("Drive")
    incident = outage(gmail, utc(2026, 11, 20, 18), utc(2026, 11, 20, 19))
    window = incident.windows.get()
    services.impact_window_edit(
        window=window,
        product=drive,
        level=Level.PARTIAL_OUTAGE,
        started_at=utc(2026, 11, 24, 18),
        ended_at=utc(2026, 11, 24, 20),
    )
    assert days(gmail) == {}
    assert days(drive) == {date(2026, 11, 24): (Level.PARTIAL_OUTAGE, timedelta(0), [incident.title])}
    # Reopened: an open window is counted when read, so the stored day goes.
    services.impact_window_edit(
        window=window, product=drive, level=Level.PARTIAL_OUTAGE, started_at=utc(2026, 11, 24, 18)
    )
    assert days(drive) == {}
    assert_fresh()


def test_moving_the_start_of_an_incident_moves_its_days() -> None:
    gmail = make_product("Gmail")
    incident = outage(gmail, utc(2026, 11, 18, 18), utc(2026, 11, 20, 19))
    assert set(days(gmail)) == {date(2026, 11, 18), date(2026, 11, 19), date(2026, 11, 20)}
    services.incident_edit(incident=incident, changes={"started_at": utc(2026, 11, 20, 18)})
    assert set(days(gmail)) == {date(2026, 11, 20)}
    services.incident_edit(incident=incident, changes={"started_at": utc(2026, 11, 17, 18)})
    assert set(days(gmail)) == {
        date(2026, 11, 17),
        date(2026, 11, 18),
        date(2026, 11, 19),
        date(2026, 11, 20),
    }
    assert_fresh()


def test_drafts_count_once_published_and_stop_when_hidden_or_deleted() -> None:
    gmail = make_product("Gmail")
    draft = outage(gmail, utc(2026, 11, 20, 18), utc(2026, 11, 20, 19), is_public=False)
    assert days(gmail) == {}
    services.incident_publish(incident=draft)
    assert set(days(gmail)) == {date(2026, 11, 20)}
    services.incident_edit(incident=draft, changes={"is_public": False})
    assert days(gmail) == {}
    services.incident_edit(incident=draft, changes={"is_public": True})
    services.incident_delete(incident=Incident.objects.get(pk=draft.pk))
    assert days(gmail) == {}
    assert_fresh()


def test_a_day_names_its_incidents_worst_first_and_counts_a_shared_minute_once() -> None:
    gmail = make_product("Gmail")
    outage(gmail, utc(2026, 11, 20, 18), utc(2026, 11, 20, 20), title="Major")
    make_incident(
        product=gmail,
        start=utc(2026, 11, 20, 17),
        end=utc(2026, 11, 20, 19),
        level=Level.PARTIAL_OUTAGE,
        title="Partial",
    )
    day = ProductDay.objects.get(product=gmail)
    assert (day.level, day.major_outage, day.partial_outage) == (
        Level.MAJOR_OUTAGE,
        timedelta(hours=2),
        timedelta(hours=1),  # 17:00-18:00: the hour after it is major
    )
    assert days(gmail)[date(2026, 11, 20)][2] == ["Major", "Partial"]
    assert_fresh()


def test_the_page_reads_what_every_window_gives_while_windows_are_open() -> None:
    gmail, drive = make_product("Gmail"), make_product("Drive")
    outage(gmail, utc(2026, 11, 20, 18), utc(2026, 11, 20, 19))
    outage(gmail, utc(2026, 11, 27, 18))  # open for two days and two hours
    scheduled(drive, NOW - timedelta(hours=2), NOW + timedelta(hours=1))  # ends after now
    assert_same_as_reference(now=NOW)
    with freeze_time(NOW + timedelta(days=2)):
        assert_same_as_reference(now=NOW + timedelta(days=2))


def test_the_rebuild_command_recounts_in_a_new_display_zone() -> None:
    gmail = make_product("Gmail")
    outage(gmail, utc(2026, 11, 20, 7), utc(2026, 11, 20, 9))  # 23:00-01:00 Pacific, 08:00-10:00 Paris
    with override_settings(DISPLAY_TIME_ZONE="Europe/Paris"):
        out = StringIO()
        call_command("rebuild_product_days", stdout=out)
        assert "1 days with impact counted in Europe/Paris" in out.getvalue()
        assert ProductDay.objects.get().zone == "Europe/Paris"
        assert_same_as_reference(now=NOW)
