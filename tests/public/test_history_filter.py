"""The history's product filter and text search (issue 29): a GET form that works without
JavaScript, bounded to the shown month, counted, links that keep the filter, clear
messages for bad input, and searched words that never become page-cache entries."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from freezegun import freeze_time

from edge.shared_cache import pages_cache
from incidents import services
from incidents.models import ImpactWindow
from tests.builders import make_incident, make_product, utc
from tests.public.helpers import add_window

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)


@pytest.fixture(autouse=True)
def _frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


@pytest.fixture
def november() -> dict[str, object]:
    gmail = make_product("Gmail")
    drive = make_product("Google Drive", position=1)
    spam = make_incident(
        title="Gmail spam filter misfires",
        product=gmail,
        start=utc(2026, 11, 3, 10),
        end=utc(2026, 11, 3, 11),
        summary="Some mail was marked as junk.",
    )
    uploads = make_incident(title="Slow uploads", product=drive, start=utc(2026, 11, 10, 13))
    services.incident_post_update(
        incident=uploads,
        status="identified",
        body="A faulty quota service throttled uploads.",
        display_at=utc(2026, 11, 10, 13, 30),
    )
    services.incident_resolve(incident=uploads, resolved_at=utc(2026, 11, 10, 14), body="Resolved.")
    both = make_incident(
        title="Sign-in trouble", product=gmail, start=utc(2026, 11, 20, 8), end=utc(2026, 11, 20, 9)
    )
    add_window(both, drive, utc(2026, 11, 20, 8), utc(2026, 11, 20, 9))
    october = make_incident(
        title="Gmail quota errors", product=gmail, start=utc(2026, 10, 5, 8), end=utc(2026, 10, 5, 9)
    )
    return {"spam": spam, "uploads": uploads, "both": both, "october": october}


def titles(html: str) -> list[str]:
    return re.findall(r'<h3 class="past__title"><a href="[^"]+">([^<]+)</a>', html)


def page(client: Client, query: str) -> str:
    response = client.get("/history/" + query)
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def test_it_filters_the_month_by_product(client: Client, november: dict[str, object]) -> None:
    html = page(client, "?month=2026-11&product=google-drive")
    assert titles(html) == ["Sign-in trouble", "Slow uploads"]
    assert "2 incidents match the filter (of 3 in November 2026)." in html
    assert re.search(r'<option value="google-drive" selected>Google Drive</option>', html)


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("spam", ["Gmail spam filter misfires"]),  # the title
        ("JUNK", ["Gmail spam filter misfires"]),  # the summary, whatever the case
        ("quota service", ["Slow uploads"]),  # an update's text
        ("  sign-in   ", ["Sign-in trouble"]),  # spaces around and inside do not matter
        ("100%", []),  # LIKE's wildcards are searched for, not obeyed
        ("quota errors", []),  # only the shown month: October's incident is not listed
    ],
)
def test_it_searches_titles_summaries_and_updates_in_the_month(
    client: Client, november: dict[str, object], q: str, expected: list[str]
) -> None:
    html = page(client, f"?month=2026-11&q={q.replace('%', '%25')}")
    assert titles(html) == expected
    assert f"{len(expected)} incident" in html
    assert "No incidents were reported in" not in html  # the count says it, not the quiet-month line


def test_it_combines_product_and_search_and_keeps_them_on_links(
    client: Client, november: dict[str, object]
) -> None:
    html = page(client, "?month=2026-11&product=gmail&q=trouble")
    assert titles(html) == ["Sign-in trouble"]
    assert "1 incident matches the filter (of 3 in November 2026)." in html
    # Every month link keeps the filter; the archive's counts (of everything) are hidden.
    assert 'href="?month=2026-10&amp;product=gmail&amp;q=trouble"' in html
    assert re.search(
        r'<a href="\?month=2026-11&amp;product=gmail&amp;q=trouble" aria-current="page">November</a>', html
    )
    # The form shows what was asked; Clear goes back to the whole month.
    assert 'name="q" value="trouble"' in html
    assert '<a href="?month=2026-11">Clear</a>' in html
    # The month is part of the form, so a new search stays on it.
    assert '<input type="hidden" name="month" value="2026-11">' in html
    # The product's own feeds, beside the filter.
    assert 'href="/products/gmail/history.atom"' in html


def test_it_works_in_french(client: Client, november: dict[str, object]) -> None:
    html = client.get("/fr/history/?month=2026-11&product=google-drive").content.decode()
    assert "2 incidents correspondent au filtre (sur 3 en novembre 2026)." in html
    assert "Chercher dans les titres et les mises à jour du mois" in html


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?q=" + "x" * 101, "Search for at most 100 characters (this has 101)."),
        ("?q=a%00b", "Control characters are not allowed in a search."),
        ("?product=nope", "There is no product “nope” on this page. Choose one from the list."),
        ("?product=%00&q=x", "There is no product"),
        ("?product=" + "p" * 500, "There is no product"),
    ],
)
def test_it_refuses_bad_input_with_a_message(
    client: Client, november: dict[str, object], query: str, message: str
) -> None:
    response = client.get("/history/" + query)
    assert response.status_code == 400
    html = response.content.decode()
    assert '<p class="notice form__error" id="filter-error" role="alert">' in html
    assert message in html
    assert 'aria-invalid="true"' in html or "product" in query
    # The page is still whole: the month's incidents, unfiltered.
    assert "Sign-in trouble" in html


def test_it_never_caches_a_search_or_a_refused_filter(client: Client, november: dict[str, object]) -> None:
    store = pages_cache()

    def page_keys() -> set[str]:
        return {k for k in store._cache if ":page:" in k}  # type: ignore[attr-defined]

    before = page_keys()
    page(client, "?product=gmail")  # a product is one of a few: a cached variant
    cached = page_keys()
    assert cached - before
    for n in range(5):
        page(client, f"?q=word{n}")
        assert client.get(f"/history/?product=nope{n}").status_code == 400
    assert page_keys() == cached
    # A search still says how long readers may keep it.
    assert "max-age" in client.get("/history/?q=spam")["Cache-Control"]


def test_it_filters_in_a_fixed_number_of_queries(
    client: Client, november: dict[str, object], django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    page(client, "?q=warm")  # sessions, settings and the like, once
    with django_assert_max_num_queries(8):
        page(client, "?month=2026-11&product=gmail&q=trouble")
