"""The home page with less clutter (issue 29): runs of quiet days in one line, an uptime
figure that counts the bars a visitor sees (30 on a phone, 90 on a wide screen), and the
bars and the grid each saying what they are for."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from django.test import Client
from django.utils import translation
from freezegun import freeze_time

from incidents.models import ImpactWindow
from public_site import history as public_history
from public_site.history import RecentDay
from public_site.templatetags.statuspage_tags import quiet_days_filter
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)  # Sunday 29 November, 12:00 PST
DASH = "\u2013"  # between the days of a range, as in "3-13 Nov"


@pytest.fixture(autouse=True)
def _frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


def text(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    return response.content.decode()


def recent_section(html: str) -> str:
    match = re.search(r'<section class="section recent".*?</section>', html, re.S)
    assert match
    return match.group(0)


def test_it_says_a_run_of_quiet_days_in_one_line(client: Client) -> None:
    gmail = make_product("Gmail")
    # Incidents on 26 Nov and 17 Nov (PST): quiet runs 27-29, 18-25 and 16 (the 14th day).
    make_incident(title="Gmail slow", product=gmail, start=utc(2026, 11, 26, 18), end=utc(2026, 11, 26, 19))
    make_incident(title="Gmail down", product=gmail, start=utc(2026, 11, 17, 18), end=utc(2026, 11, 17, 19))

    recent = recent_section(text(client.get("/")))

    lines = re.findall(r'<div class="recent__day recent__day--quiet">\s*<p class="empty">([^<]+)</p>', recent)
    assert lines == [
        f"No incidents reported, 27{DASH}29 Nov",
        f"No incidents reported, 18{DASH}25 Nov",
        "No incidents reported, 16 Nov",
    ]
    assert recent.count('<h3 class="recent__date">') == 2  # only days with incidents get a heading
    assert recent.index("Gmail slow") < recent.index(f"18{DASH}25 Nov") < recent.index("Gmail down")
    assert "No incidents reported.</p>" not in recent  # the old line per quiet day


def test_fourteen_quiet_days_are_one_line(client: Client) -> None:
    make_product("Gmail")
    recent = recent_section(text(client.get("/")))
    assert re.findall(r'<p class="empty">([^<]+)</p>', recent) == [f"No incidents reported, 16{DASH}29 Nov"]
    french = recent_section(text(client.get("/fr/")))
    assert re.findall(r'<p class="empty">([^<]+)</p>', french) == ["Aucun incident signalé du 16 au 29 nov."]


@pytest.mark.parametrize(
    ("first", "last", "english", "french"),
    [
        (
            date(2026, 11, 3),
            date(2026, 11, 13),
            f"No incidents reported, 3{DASH}13 Nov",
            "Aucun incident signalé du 3 au 13 nov.",
        ),
        (
            date(2026, 10, 28),
            date(2026, 11, 3),
            f"No incidents reported, 28 Oct{DASH}3 Nov",
            "Aucun incident signalé du 28 oct. au 3 nov.",
        ),
        (
            date(2026, 12, 1),
            date(2026, 12, 5),
            f"No incidents reported, 1{DASH}5 Dec",
            "Aucun incident signalé du 1er au 5 déc.",
        ),
        (
            date(2026, 12, 1),
            date(2026, 12, 1),
            "No incidents reported, 1 Dec",
            "Aucun incident signalé le 1er déc.",
        ),
    ],
)
def test_it_writes_the_range_as_each_language_does(
    first: date, last: date, english: str, french: str
) -> None:
    entry = RecentDay(first=first, date=last, incidents=())
    with translation.override("en"):
        assert quiet_days_filter(entry) == english
    with translation.override("fr"):
        assert quiet_days_filter(entry) == french


def test_it_groups_in_the_selector_with_no_more_queries(django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    make_incident(title="Gmail slow", product=gmail, start=utc(2026, 11, 26, 18), end=utc(2026, 11, 26, 19))
    with django_assert_num_queries(2):
        entries = public_history.recent_incidents(now=NOW, days=14)
    assert [(e.first, e.date, len(e.incidents)) for e in entries] == [
        (date(2026, 11, 27), date(2026, 11, 29), 0),
        (date(2026, 11, 26), date(2026, 11, 26), 1),
        (date(2026, 11, 16), date(2026, 11, 25), 0),
    ]


def test_the_figure_beside_the_bars_counts_the_days_they_show(client: Client) -> None:
    gmail = make_product("Gmail")
    # 6 hours of major outage 60 days ago: inside the 90 days, outside the last 30.
    start = NOW - timedelta(days=60)
    make_incident(title="Old outage", product=gmail, start=start, end=start + timedelta(hours=6))

    for html in (text(client.get("/")), text(client.get("/products/gmail/"))):
        wide = re.search(
            r'<span class="uptime__value uptime__value--long"><strong>([\d.]+)&nbsp;%</strong> uptime'
            r'<span class="uptime__period"> over 90 days</span>',
            html,
        )
        narrow = re.search(
            r'<span class="uptime__value uptime__value--narrow"><strong>([\d.]+)&nbsp;%</strong> uptime'
            r" over 30 days</span>",
            html,
        )
        assert wide and narrow
        assert wide.group(1) == "99.72"  # 360 minutes of 129,600 (rounded down)
        assert narrow.group(1) == "100.00"  # the last 30 days had no impact
        assert ">30 days ago</span>" in html and ">90 days ago</span>" in html
        # The bars' name does not claim a count that depends on the width.
        assert 'aria-label="Gmail: daily status, oldest first"' in html
        assert "daily status for the last 90 days" not in html


def test_the_bars_and_the_grid_say_what_each_is_for(client: Client) -> None:
    make_product("Gmail")
    html = text(client.get("/"))
    assert (
        "Each bar is a day, coloured by its worst impact, and the figure is the uptime over the days shown"
        in html
    )
    assert "a bar shows only a day's worst incident, a day here shows each of them" in html
