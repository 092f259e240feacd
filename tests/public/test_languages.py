"""The public pages in two languages: English at the bare paths, French under /fr/.

The path names the language (edge.i18n); the first visit to `/` follows the switch's
cookie or Accept-Language; the page cache, its stale copies and snapshots, and the live
page's fragments are per language.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from edge import page_cache
from incidents.models import ImpactWindow
from public_site.templatetags.statuspage_tags import day_label_filter, duration_filter
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

FRENCH_BROWSER = "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7"


def test_it_serves_french_under_fr_and_english_at_the_bare_paths(client: Client) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(title="Gmail is down", product=gmail, start=utc(2026, 1, 1))

    english = client.get("/").content.decode()
    assert '<html lang="en">' in english
    assert "Current status by product" in english

    french = client.get("/fr/")
    body = french.content.decode()
    assert french.status_code == 200
    assert french["Content-Language"] == "fr"
    assert '<html lang="fr">' in body
    assert "État actuel par produit" in body
    assert "Current status by product" not in body
    # Links stay in French, and the English page names its French twin.
    assert f'href="/fr/incidents/{incident.public_id}/"' in body
    # hreflang alternates are absolute (search engines require it), on SITE_URL.
    assert f'<link rel="alternate" hreflang="fr" href="{settings.SITE_URL}/fr/">' in english

    for path in (
        f"/fr/incidents/{incident.public_id}/",
        "/fr/history/",
        f"/fr/products/{gmail.slug}/",
        f"/fr/products/{gmail.slug}/uptime/",
        "/fr/subscribe/",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert '<html lang="fr">' in response.content.decode(), path
    assert "Historique des incidents" in client.get("/fr/history/").content.decode()
    assert "S\u2019abonner aux mises à jour" in client.get("/fr/subscribe/").content.decode()


def test_it_keeps_the_api_feeds_and_badges_at_one_address(client: Client) -> None:
    make_product("Gmail")
    for path in ("/fr/api/v2/summary.json", "/fr/history.atom", "/fr/badge.svg", "/fr/live/version.json"):
        assert client.get(path).status_code == 404, path
    summary = client.get("/api/v2/summary.json", HTTP_ACCEPT_LANGUAGE=FRENCH_BROWSER)
    assert summary.json()["status"]["description"] == "All Systems Operational"
    # No answer but `/` varies on the visitor's headers.
    assert "Accept-Language" not in summary.get("Vary", "")
    assert "Accept-Language" not in client.get("/history/").get("Vary", "")


def test_it_sends_a_french_browser_from_the_home_page_to_fr(client: Client) -> None:
    make_product("Gmail")
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=FRENCH_BROWSER)
    assert response.status_code == 302
    assert response["Location"] == "/fr/"
    assert "Accept-Language" in response["Vary"]
    assert "private" in response["Cache-Control"]

    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en-GB,en;q=0.9,fr;q=0.5")
    assert english.status_code == 200
    assert "Accept-Language" in english["Vary"]
    assert english["Cache-Control"].startswith("public")
    # A language we do not have falls to the next one the browser accepts.
    assert client.get("/", HTTP_ACCEPT_LANGUAGE="de-DE,fr;q=0.8")["Location"] == "/fr/"
    # Deep links show the language they name, whatever the browser says.
    assert client.get("/history/", HTTP_ACCEPT_LANGUAGE=FRENCH_BROWSER).status_code == 200
    # The live script re-reading the English page is never redirected.
    live = client.get("/", HTTP_ACCEPT_LANGUAGE=FRENCH_BROWSER, HTTP_SEC_FETCH_MODE="cors")
    assert live.status_code == 200


def test_it_switches_language_and_remembers_the_choice(client: Client) -> None:
    gmail = make_product("Gmail")
    incident = make_incident(title="Gmail is down", product=gmail, start=utc(2026, 1, 1))
    page = f"/incidents/{incident.public_id}/"

    english = client.get(page).content.decode()
    assert f'href="/language/fr/?next=%2Fincidents%2F{incident.public_id}%2F"' in english

    to_french = client.get(f"/language/fr/?next={page}")
    assert to_french.status_code == 302
    assert to_french["Location"] == f"/fr{page}"
    assert to_french.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"
    # Remembered: the home page now opens in French, even for an English browser...
    assert client.get("/", HTTP_ACCEPT_LANGUAGE="en-US")["Location"] == "/fr/"

    back = client.get(f"/language/en/?next=/fr{page}%3Fx%3D1")
    assert back["Location"] == f"{page}?x=1"
    assert back.cookies[settings.LANGUAGE_COOKIE_NAME].value == "en"
    # ...and English by choice beats a French browser, privately.
    chosen = client.get("/", HTTP_ACCEPT_LANGUAGE=FRENCH_BROWSER)
    assert chosen.status_code == 200
    assert "private" in chosen["Cache-Control"]

    # Only local pages; anything else lands on that language's home page.
    assert client.get("/language/fr/?next=https://evil.example/")["Location"] == "/fr/"
    assert client.get("/language/fr/?next=/api/v2/summary.json")["Location"] == "/fr/"
    assert client.get("/language/de/").status_code == 404


def test_it_caches_each_language_on_its_own(client: Client) -> None:
    make_product("Gmail")
    french = client.get("/fr/").content.decode()
    assert "Opérationnel" in french
    # An English request right after a French one (same version, warm cache) is English.
    english = client.get("/").content.decode()
    assert "Operational" in english and "Opérationnel" not in english
    assert client.get("/fr/").content.decode() == french
    assert client.get("/").content.decode() == english


def test_it_keeps_a_stale_copy_and_a_snapshot_per_language(client: Client, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings.VAR_DIR = tmp_path
    make_product("Gmail")
    client.get("/")
    client.get("/fr/")
    english_snapshot = page_cache.snapshot_read("index")
    french_snapshot = page_cache.snapshot_read("index@fr")
    assert english_snapshot is not None and french_snapshot is not None
    assert (tmp_path / "snapshots" / "index.fr.html").exists()
    assert b'<html lang="fr">' in french_snapshot.body
    assert b'<html lang="en">' in english_snapshot.body
    # The fallback a failing rebuild answers with is the page's own language.
    english_last = page_cache._previous("index", "index")
    french_last = page_cache._previous("index@fr", "index@fr")
    assert english_last is not None and b'lang="en"' in english_last.body
    assert french_last is not None and b'lang="fr"' in french_last.body


def test_it_gives_the_live_page_french_fragments_on_french_pages(client: Client) -> None:
    # live.js re-reads window.location: on /fr/ that is the French page, which carries
    # the same data-live sections, in French.
    gmail = make_product("Gmail")
    make_incident(
        title="Gmail is down",
        product=gmail,
        start=timezone.now() - timedelta(minutes=90),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
    )
    live = client.get("/fr/", HTTP_SEC_FETCH_MODE="cors").content.decode()
    assert 'data-live="banner"' in live and 'data-live="incidents"' in live
    assert "Panne majeure" in live and "des systèmes" not in live
    assert "Incidents en cours" in live
    assert "Active incidents" not in live
    assert 'data-version-url="/live/version.json"' in live


def test_it_writes_dates_numbers_and_durations_the_french_way(client: Client) -> None:
    from django.utils import translation

    gmail = make_product("Gmail")
    start = timezone.now() - timedelta(days=3)
    make_incident(
        title="Gmail is slow",
        product=gmail,
        start=start,
        end=start + timedelta(minutes=90),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
    )
    french = client.get("/fr/").content.decode()
    english = client.get("/").content.decode()
    # French keeps each number with its unit (no-break spaces): "1 h 30 min" never wraps.
    assert "Durée 1\u00a0h 30\u00a0min" in french and "Duration 1 h 30 min" in english
    # A decimal comma and French month abbreviations.
    assert re.search(r"<strong>99,\d\d&nbsp;%</strong>", french)
    assert re.search(r"<strong>99\.\d\d&nbsp;%</strong>", english)
    with translation.override("fr"):
        assert day_label_filter(utc(2026, 12, 2).date()) == "mer. 2 déc. 2026"
        assert duration_filter(timedelta(days=1, hours=5, minutes=46)) == "1\u00a0j 5\u00a0h 46\u00a0min"
    with translation.override("en"):
        assert day_label_filter(utc(2026, 12, 2).date()) == "Wed 2 Dec 2026"
        assert duration_filter(timedelta(days=1, hours=5, minutes=46)) == "1 d 5 h 46 min"


def test_it_shows_subscribe_form_errors_in_french(client: Client) -> None:
    make_product("Gmail")
    response = client.post("/fr/subscribe/", {"kind": "email", "email": "", "scope": "some"})
    body = response.content.decode()
    assert response.status_code == 400  # the form again, with its errors
    assert "Choisissez au moins un produit, ou tous." in body
    assert "Adresse de courriel" in body


def test_it_localises_the_uptime_report_but_not_its_chart_coordinates(client: Client) -> None:
    gmail = make_product("Gmail")
    start = timezone.now() - timedelta(days=3)
    make_incident(title="Gmail is slow", product=gmail, start=start, end=start + timedelta(minutes=90))
    body = client.get(f"/fr/products/{gmail.slug}/uptime/").content.decode()
    assert "Comment la disponibilité est mesurée" in body
    assert "minutes de panne partielle \u00d7 0,3" in body
    # A decimal comma whatever the month's length so far (early in a month, 90 minutes
    # weigh more than 1 %).
    assert re.search(r"<td data-label=\"Disponibilité\">9\d,\d\d\u00a0%</td>", body)
    # SVG attributes are for the browser: "12.5", never "12,5".
    bars = re.findall(r'<rect class="chart__bar[^"]*" x="([^"]+)" y="([^"]+)" width="([^"]+)"', body)
    assert bars and all("," not in value for bar in bars for value in bar)
    english = client.get(f"/products/{gmail.slug}/uptime/").content.decode()
    assert "partial outage minutes x 0.3" in english
