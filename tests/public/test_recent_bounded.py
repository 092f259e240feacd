""" "Recent incidents" on `/` lists at most a few incidents a day (issue 30): the worst
first, then the newest, shown newest first, and "N more incidents on <day>" leading to the
day on the monthly history, which lists them all. Read in two queries whatever the day
holds."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents.models import ImpactWindow, Incident
from public_site import history as public_history
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)  # Sunday 29 November, 12:00 PST


@pytest.fixture(autouse=True)
def _frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


def recent_section(html: str) -> str:
    match = re.search(r'<section class="section recent".*?</section>', html, re.S)
    assert match
    return match.group(0)


def busy_day() -> None:
    """Five incidents on 26 Nov (PST), one later maintenance, one incident on 25 Nov."""
    gmail = make_product("Gmail")
    drive = make_product("Drive")
    day = (2026, 11, 26)
    make_incident(title="Slow early", product=gmail, level=Level.DEGRADED_PERFORMANCE, start=utc(*day, 16))
    make_incident(title="Outage at noon", product=drive, level=Level.MAJOR_OUTAGE, start=utc(*day, 20))
    make_incident(title="Partial one", product=gmail, level=Level.PARTIAL_OUTAGE, start=utc(*day, 21))
    make_incident(title="Partial two", product=drive, level=Level.PARTIAL_OUTAGE, start=utc(*day, 22))
    make_incident(title="Slow late", product=gmail, level=Level.DEGRADED_PERFORMANCE, start=utc(*day, 23))
    make_incident(title="Day before", product=gmail, start=utc(2026, 11, 25, 18), end=utc(2026, 11, 25, 19))


def test_a_busy_day_shows_its_worst_three_newest_first_and_counts_the_rest(client: Client) -> None:
    busy_day()
    days = public_history.recent_incidents(now=NOW, days=14)
    busy = next(d for d in days if d.date.day == 26)
    assert [i.incident.title for i in busy.incidents] == ["Partial two", "Partial one", "Outage at noon"]
    assert (busy.total, busy.more) == (5, 2)
    before = next(d for d in days if d.date.day == 25)
    assert ([i.incident.title for i in before.incidents], before.more) == (["Day before"], 0)

    recent = recent_section(client.get("/").content.decode())
    assert "Slow early" not in recent and "Slow late" not in recent
    links = re.findall(r'<p class="recent__more"><a href="([^"]+)">([^<]+)</a></p>', recent)
    assert links == [("/history/?month=2026-11#day-2026-11-26", "2 more incidents on Thu 26 Nov 2026")]


def test_the_link_leads_to_the_day_on_the_history_which_lists_them_all(client: Client) -> None:
    busy_day()
    html = client.get("/history/?month=2026-11").content.decode()
    # The anchor is on the day's newest incident; every one of the day follows it.
    anchored = re.search(r'<li class="past" id="day-2026-11-26">.*?<a href="[^"]+">([^<]+)</a>', html, re.S)
    assert anchored and anchored.group(1) == "Slow late"
    after = html[anchored.start() :]
    for title in ("Slow late", "Partial two", "Partial one", "Outage at noon", "Slow early"):
        assert title in after
    assert html.count('id="day-2026-11-26"') == 1
    assert 'id="day-2026-11-25"' in html


def test_in_french(client: Client) -> None:
    busy_day()
    recent = recent_section(client.get("/fr/").content.decode())
    assert re.findall(r'<p class="recent__more"><a href="[^"]+">([^<]+)</a></p>', recent) == [
        "2 autres incidents le jeu. 26 nov. 2026"
    ]


def test_a_maintenance_gives_way_to_an_outage() -> None:
    gmail = make_product("Gmail")
    for hour in (16, 17, 18):
        make_incident(
            title=f"Works {hour}",
            product=gmail,
            level=Level.UNDER_MAINTENANCE,
            kind=Incident.Kind.MAINTENANCE,
            impact=Incident.Impact.NONE,
            start=utc(2026, 11, 27, hour),
            scheduled_for=utc(2026, 11, 27, hour),
            scheduled_until=utc(2026, 11, 27, hour, 30),
        )
    make_incident(title="Down", product=gmail, start=utc(2026, 11, 27, 10), end=utc(2026, 11, 27, 11))
    day = next(d for d in public_history.recent_incidents(now=NOW, days=14) if d.date.day == 27)
    assert [i.incident.title for i in day.incidents] == ["Works 18", "Works 17", "Down"]
    assert day.more == 1


@pytest.mark.parametrize("per_day_count", [4, 40])
def test_two_queries_whatever_the_day_holds(django_assert_num_queries, per_day_count: int) -> None:  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    for n in range(per_day_count):
        make_incident(title=f"Blip {n}", product=gmail, start=utc(2026, 11, 28, 17, n % 60))
    with django_assert_num_queries(2):
        days = public_history.recent_incidents(now=NOW, days=14)
    day = next(d for d in days if d.date.day == 28)
    assert (len(day.incidents), day.total) == (3, per_day_count)
