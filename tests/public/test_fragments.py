"""The status page's product rows as cached fragments (public_site.cards, edge.fragments):
compact bars and grid, a change rebuilds only what it touched, and nothing stale shows."""

from __future__ import annotations

import gzip
import itertools
import re
from datetime import date, timedelta
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client
from freezegun import freeze_time

from edge.version import VERSION_KEY
from incidents import daily, services
from incidents.models import ImpactWindow
from public_site import cards, day_markup
from public_site.pages import GRID_MARKS
from tests.builders import make_group, make_incident, make_product, utc
from tests.public.helpers import add_window

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)  # 12:00 PST


def _days(impacted: set[int], count: int = 90) -> list[daily.Bar]:
    first = date(2026, 9, 1)
    out = []
    for i in range(count):
        d = first + timedelta(days=i)
        if i in impacted:
            hour = (timedelta(hours=1), timedelta(0), timedelta(0), timedelta(0))
            out.append(daily.Bar(d, Level.MAJOR_OUTAGE, hour, f"inc{i}", f"Incident {i}", 1))
        else:
            out.append(daily.quiet_bar(d))
    return out


def test_it_draws_quiet_days_as_runs_split_where_a_phone_stops() -> None:
    runs = day_markup.bar_runs(_days({70}))
    assert [(s.length, s.day is not None) for s in runs.early] == [(60, False)]
    assert [(s.length, s.day is not None) for s in runs.recent] == [(10, False), (1, True), (19, False)]
    assert runs.recent[1].first == date(2026, 9, 1) + timedelta(days=70)
    # Every day is drawn once, in order.
    segments = [*runs.early, *runs.recent]
    assert sum(s.length for s in segments) == 90
    assert all(a.last < b.first for a, b in itertools.pairwise(segments))


def test_it_never_makes_a_run_longer_than_the_stylesheet_sizes() -> None:
    runs = day_markup.bar_runs(_days(set(), count=200), recent=30)
    assert [s.length for s in runs.early] == [60, 60, 50]
    assert max(s.length for s in runs.recent) <= day_markup.MAX_RUN


@pytest.fixture
def frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


def _get(client: Client, url: str = "/") -> str:
    """The page as rebuilt for the current state. Inside a test's transaction the
    services' after-commit bump of the page version never runs: a new stamp stands in."""
    cache.delete(VERSION_KEY)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _card(html: str, product_id: str) -> str:
    match = re.search(rf'<li class="product" data-component-id="{product_id}".*?</li>', html, re.S)
    assert match, product_id
    return match.group(0)


@pytest.mark.django_db
def test_a_quiet_product_is_a_few_elements_and_a_few_hundred_compressed_bytes(
    client: Client, frozen: None
) -> None:
    group = make_group("Workspace")
    products = [make_product(f"Product {i}", group=group, position=i) for i in range(20)]
    html = _get(client)
    card = _card(html, products[3].public_id)
    assert card.count('class="bar ') == 2  # the 60 early days, the 30 a phone shows
    assert 'class="bar bar--operational q60"' in card and 'class="bar bar--operational q30"' in card
    # 20 quiet products: far under the 2 KiB of compressed HTML per product.
    assert len(gzip.compress(html.encode())) < 20 * 2048


@pytest.mark.django_db
def test_a_card_draws_each_day_by_its_level_and_counts_them_for_screen_readers(
    client: Client, frozen: None
) -> None:
    gmail = make_product("Gmail")
    make_incident(
        title="Gmail slow",
        product=gmail,
        start=NOW - timedelta(days=40),
        end=NOW - timedelta(days=40, hours=-1),
    )
    card = _card(_get(client), gmail.public_id)
    # No link, tooltip or text of its own: the day is its colour.
    assert '<span class="bar bar--major_outage"></span>' in card
    assert '<a class="bar' not in card and "Gmail slow" not in card and 'title="' not in card
    # Each part says what it draws: the 60 days a phone hides, then the last 30.
    assert (
        '<span class="sr-only">Tue 1 Sep 2026 \u2013 Fri 30 Oct 2026: Major outage 1 day, '
        "Operational 59 days</span>"
    ) in card
    assert '<span class="sr-only">Sat 31 Oct 2026 \u2013 Sun 29 Nov 2026: Operational 30 days</span>' in card
    french = _card(_get(client, "/fr/"), gmail.public_id)
    assert "Panne majeure 1\u00a0jour, Opérationnel 59\u00a0jours</span>" in french
    # The product page keeps the day's link, tooltip and text.
    product = _get(client, f"/products/{gmail.slug}/")
    assert "Tue 20 Oct 2026: Major outage 1 h · Gmail slow" in product
    assert '<span class="sr-only">Tue 20 Oct 2026: Major outage \u2013 Gmail slow</span>' in product


@pytest.mark.django_db
def test_it_bounds_the_marks_of_a_busy_day_in_the_grid(client: Client, frozen: None) -> None:
    gmail = make_product("Gmail")
    for i in range(5):
        start = NOW - timedelta(hours=10 - i)
        make_incident(title=f"Blip {i}", product=gmail, start=start, end=start + timedelta(minutes=20))
    html = _get(client)
    grid = html.split('id="grid-title"')[1].split('id="recent-title"')[0]
    assert grid.count('class="grid__mark"') == GRID_MARKS
    assert f'<a class="grid__more" href="/products/{gmail.slug}/" title="2 more incidents">' in grid
    assert "29 Nov: 2 more incidents" in grid
    # The card's bar is the day's level only; on the product page today's bar names the
    # day's worst incident and how many more, in the tooltip and in the text a screen
    # reader says.
    assert "Blip" not in _card(html, gmail.public_id)
    product = _get(client, f"/products/{gmail.slug}/")
    bar = re.search(r'<a class="bar bar--\w+" href="/incidents/\w+/" title="([^"]+)"[^>]*>(.*?)</a>', product)
    assert bar and bar.group(1).startswith("Sun 29 Nov 2026: ")
    assert bar.group(1).endswith(" · Blip 0 and 4 more")
    assert bar.group(2).endswith(" \u2013 Blip 0 and 4 more</span>")
    french = _get(client, "/fr/")
    assert 'title="2 autres incidents"' in french


@pytest.mark.django_db
def test_a_change_to_one_product_rebuilds_its_fragments_only(
    client: Client, frozen: None, monkeypatch: Any
) -> None:
    group = make_group("Cloud")
    products = [make_product(f"Product {i}", group=group, position=i) for i in range(6)]
    built: list[str] = []

    def counting(render: Any) -> Any:
        def wrapper(self: cards._Builder, row: Any) -> str:
            built.append(row.product.name)
            return render(self, row)

        return wrapper

    monkeypatch.setattr(cards._Builder, "card", counting(cards._Builder.card))
    monkeypatch.setattr(cards._Builder, "grid_row", counting(cards._Builder.grid_row))
    _get(client)
    assert len(built) == 12  # a card and a grid row each
    built.clear()

    make_incident(title="Storage errors", product=products[2], start=NOW - timedelta(hours=2))
    html = _get(client)
    assert built == ["Product 2", "Product 2"]
    assert 'data-status="major_outage"' in _card(html, products[2].public_id)
    assert "Storage errors" in html.split('id="grid-title"')[1]


@pytest.mark.django_db
def test_no_stale_fragment_shows_after_a_change(client: Client, frozen: None) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(title="Gmail slow", product=gmail, start=NOW - timedelta(hours=3))
    html = _get(client)
    assert "Gmail slow" in _grid(html)
    open_figures = _figures(_card(html, gmail.public_id))

    # A title edit moves no product's version: the grid row's key holds the titles it shows.
    services.incident_edit(incident=incident, changes={"title": "Gmail sends late"})
    grid = _grid(_get(client))
    assert "Gmail sends late" in grid and "Gmail slow" not in grid

    # Resolving closes the window: status and figures follow.
    services.incident_resolve(incident=incident, resolved_at=NOW - timedelta(hours=1), body="Fixed.")
    card = _card(_get(client), gmail.public_id)
    assert 'data-status="operational"' in card
    resolved_figures = _figures(card)
    assert resolved_figures != open_figures

    # A window added to an old incident on the same day changes the figures.
    add_window(incident, gmail, NOW - timedelta(minutes=50), NOW - timedelta(minutes=20))
    assert _figures(_card(_get(client), gmail.public_id)) not in (open_figures, resolved_figures)

    # A rename (a catalogue edit) shows on the card and in its group at once.
    gmail.refresh_from_db()
    services.product_edit(product=gmail, changes={"name": "Gmail Web"})
    html = _get(client)
    assert 'data-component-name="Gmail Web"' in _card(html, gmail.public_id)
    assert '<a href="/products/gmail/">Gmail Web</a>' in _grid(html)


@pytest.mark.django_db
def test_an_open_incident_refreshes_its_card_as_time_passes(client: Client) -> None:
    gmail = make_product("Gmail")
    with freeze_time(NOW):
        make_incident(title="Gmail slow", product=gmail, start=NOW - timedelta(hours=1))
        before = _figures(_card(_get(client), gmail.public_id))
    # No write, only the clock: the figures move on.
    with freeze_time(NOW + timedelta(hours=2)):  # past the page cache's TTL
        after = _figures(_card(_get(client), gmail.public_id))
    assert len(after) == 2 and all(float(a) < float(b) for a, b in zip(after, before, strict=True))


def _grid(html: str) -> str:
    return html.split('id="grid-title"')[1].split('id="recent-title"')[0]


def _figures(card: str) -> list[str]:
    """The card's uptime figures: over the 90 days, then over the 30 a phone shows."""
    return re.findall(r"<strong>([\d.]+)&nbsp;%</strong>", card)


def test_the_embedded_cache_holds_the_fragments_of_a_thousand_products() -> None:
    default: dict[str, Any] = settings.CACHES["default"]
    if default["BACKEND"].endswith("LocMemCache"):
        assert default["OPTIONS"]["MAX_ENTRIES"] >= 4 * 1000 * len(settings.LANGUAGES)
