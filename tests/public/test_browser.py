"""The public pages in real Chromium (Playwright): phone and desktop, JavaScript on and off.

Every page load fails the test on a console error or an uncaught page error (which also
catches Content-Security-Policy violations, such as an inline script), and on a page wider
than a 360 px phone. Screenshots go to test-artifacts/screenshots/ for people to look at.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from incidents.models import Incident
from tests.public.browsing import PageProblems

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
VIEWPORTS = {"phone": {"width": 360, "height": 780}, "desktop": {"width": 1280, "height": 800}}


@pytest.fixture
def demo(transactional_db: None) -> dict[str, str]:
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    gcs = Incident.objects.get(title__startswith="Cloud Storage elevated write latency")
    return {
        "index": "/",
        "incident": f"/incidents/{gcs.public_id}/",
        "product": "/products/cloud-storage/",
        "history": "/history/?month=2009-09",
    }


def _open(browser: Any, *, viewport: str, js: bool) -> Any:
    context = browser.new_context(viewport=VIEWPORTS[viewport], java_script_enabled=js)
    return context, context.new_page()


@pytest.mark.parametrize("viewport", ["phone", "desktop"])
@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_it_renders_public_pages_without_errors(
    browser: Any, live_server: Any, demo: dict[str, str], viewport: str, js: bool
) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context, page = _open(browser, viewport=viewport, js=js)
    problems = PageProblems(page)
    try:
        for name, path in demo.items():
            response = page.goto(live_server.url + path, wait_until="load")
            assert response is not None and response.status == 200, (path, response and response.status)
            assert page.locator("h1").first.is_visible()
            page.screenshot(
                path=str(SCREENSHOTS / f"{name}-{viewport}-{'js' if js else 'nojs'}.png"), full_page=True
            )
            # Nothing sideways-scrolls the whole page at phone width; wide tables scroll
            # inside their own focusable region instead.
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{path} is {overflow}px wider than the {viewport} viewport"
        assert problems.errors == []
    finally:
        context.close()


def test_it_shows_the_incident_facts_in_the_browser(
    browser: Any, live_server: Any, demo: dict[str, str]
) -> None:
    context, page = _open(browser, viewport="desktop", js=False)
    try:
        page.goto(live_server.url + demo["incident"])
        assert page.locator("[data-total-duration]").inner_text() == "18 h 11 min"
        rows = page.locator("tr.window")
        assert rows.count() == 2
        assert "us-central1-b" in rows.nth(1).inner_text()
        # Times are machine-readable and carry their offset.
        assert page.locator("time[datetime*='T']").count() > 0
    finally:
        context.close()


def test_it_is_keyboard_navigable(browser: Any, live_server: Any, demo: dict[str, str]) -> None:
    context, page = _open(browser, viewport="desktop", js=True)
    try:
        page.goto(live_server.url + "/")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent.trim()") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        # Tabbing onwards reaches links to incidents from the uptime bars or the grid.
        reached = set()
        for _ in range(60):
            page.keyboard.press("Tab")
            reached.add(page.evaluate("document.activeElement.getAttribute('href') || ''"))
        assert any(href.startswith("/incidents/") for href in reached)
    finally:
        context.close()


# --- The live page -------------------------------------------------------------------------
# With the page open, an incident is opened, updated and resolved through the services
# (as staff would elsewhere); the open page must show each change within the refresh
# interval, without a reload.

LIVE_INTERVAL = 1  # seconds, LIVE_REFRESH_SECONDS for these tests
# One interval to notice, one for the fetch and swap, and slack for a loaded machine.
LIVE_DEADLINE_MS = 4 * LIVE_INTERVAL * 1000


def _no_reload_marker(page: Any) -> None:
    page.evaluate("window.__notReloaded = true")


def _assert_not_reloaded(page: Any) -> None:
    assert page.evaluate("window.__notReloaded === true"), "the page reloaded"


def _wait_text(page: Any, selector: str, text: str, *, present: bool = True) -> None:
    page.wait_for_function(
        "([sel, text, present]) => { const el = document.querySelector(sel);"
        " const has = !!el && el.textContent.includes(text); return has === present; }",
        arg=[selector, text, present],
        timeout=LIVE_DEADLINE_MS,
    )


@pytest.fixture
def live_settings(settings: Any) -> None:
    settings.LIVE_REFRESH_SECONDS = LIVE_INTERVAL


def test_it_keeps_every_section_of_the_status_page_current(
    browser: Any, live_server: Any, demo: dict[str, str], live_settings: None
) -> None:
    from django.utils import timezone

    from incidents.models import Product
    from incidents.services import WindowSpec, incident_open, incident_post_update, incident_resolve

    gmail = Product.objects.get(slug="gmail")
    context, page = _open(browser, viewport="phone", js=True)
    problems = PageProblems(page)
    try:
        page.goto(live_server.url + "/")
        _no_reload_marker(page)
        assert page.locator("[data-banner-description]").inner_text() == "All Systems Operational"

        incident = incident_open(
            title="Gmail cannot send mail",
            impact="critical",
            body="We are investigating failures to send mail.",
            windows=[WindowSpec(product=gmail, level="major_outage", started_at=timezone.now())],
        )
        _wait_text(page, "[data-live='incidents']", "Gmail cannot send mail")
        _wait_text(page, "[data-live='recent']", "Gmail cannot send mail")
        assert page.locator("[data-banner-description]").inner_text() != "All Systems Operational"
        row = page.locator(f"[data-component-id='{gmail.public_id}'] [data-status]")
        assert row.get_attribute("data-status") == "major_outage"
        assert "icon--major_outage" in (page.locator(".brand__mark").get_attribute("class") or "")
        assert page.locator("[data-live='grid'] .grid__mark[title*='Gmail cannot send mail']").count() == 1

        incident_post_update(incident=incident, status="identified", body="A bad config push; rolling back.")
        _wait_text(page, "[data-live='incidents']", "A bad config push")
        assert "Identified" in page.locator("[data-live='incidents'] .badge--status").first.inner_text()

        incident_resolve(incident=incident, body="Mail flows again.")
        _wait_text(page, "[data-live='incidents']", "Gmail cannot send mail", present=False)
        _wait_text(page, "[data-banner-description]", "All Systems Operational")
        assert (
            page.locator(f"[data-component-id='{gmail.public_id}'] [data-status]").get_attribute(
                "data-status"
            )
            == "operational"
        )
        assert "icon--operational" in (page.locator(".brand__mark").get_attribute("class") or "")
        # Resolved, it still leaves its trace under today's recent incidents.
        today = page.locator("[data-live='recent'] .recent__day").first
        assert "Gmail cannot send mail" in today.inner_text()
        assert "Resolved" in today.inner_text()
        _assert_not_reloaded(page)
        assert problems.errors == []
    finally:
        context.close()


def test_it_keeps_an_open_incident_page_current(
    browser: Any, live_server: Any, demo: dict[str, str], live_settings: None
) -> None:
    from django.utils import timezone

    from incidents.models import Product
    from incidents.services import WindowSpec, incident_open, incident_post_update, incident_resolve

    drive = Product.objects.get(slug="drive")
    incident = incident_open(
        title="Drive uploads stall",
        impact="major",
        body="Uploads stall at 99%.",
        windows=[WindowSpec(product=drive, level="partial_outage", started_at=timezone.now())],
    )
    context, page = _open(browser, viewport="desktop", js=True)
    problems = PageProblems(page)
    try:
        page.goto(f"{live_server.url}/incidents/{incident.public_id}/")
        _no_reload_marker(page)
        assert "Investigating" in page.locator(".incident__header .badge--status").inner_text()

        incident_post_update(incident=incident, status="monitoring", body="A fix is out; watching uploads.")
        _wait_text(page, "[data-live='incident'] .timeline", "A fix is out")
        assert "Monitoring" in page.locator(".incident__header .badge--status").inner_text()

        incident_resolve(incident=incident, body="Uploads complete normally.")
        _wait_text(page, "[data-live='incident'] .incident__header", "Resolved")
        _wait_text(page, "[data-live='incident'] .timeline", "Uploads complete normally")
        assert "Ongoing" not in page.locator("[data-live='incident'] .facts").inner_text()
        _assert_not_reloaded(page)
        assert problems.errors == []
    finally:
        context.close()


def test_it_polls_a_small_version_document_and_keeps_the_page_when_it_fails(
    browser: Any, live_server: Any, demo: dict[str, str], live_settings: None
) -> None:
    context, page = _open(browser, viewport="desktop", js=True)
    # The browser itself logs the failed request; the script must add nothing to it.
    problems = PageProblems(page, ignore=("Failed to load resource",))
    requests: list[str] = []
    try:
        page.route("**/live/version.json", lambda route: route.fulfill(status=503, body="down"))
        page.goto(live_server.url + "/")
        page.on("request", lambda request: requests.append(request.url))
        before = page.locator("main").inner_text()
        page.wait_for_timeout(2500 * LIVE_INTERVAL)
        polls = [url for url in requests if url.endswith("/live/version.json")]
        assert len(polls) >= 2
        # Nothing but the version document is asked for while nothing changes.
        assert [url for url in requests if url.rstrip("/") == live_server.url] == []
        assert page.locator("main").inner_text() == before
        assert problems.errors == []
    finally:
        context.close()


def test_it_embeds_the_status_snippet_on_a_page_with_a_strict_csp(
    browser: Any, live_server: Any, demo: dict[str, str]
) -> None:
    """Another site pastes our snippet under a CSP with no inline script or style at all.

    Both sites get public-looking names, answered by Playwright: our origin is proxied to
    the live server from outside the browser, because Chromium refuses a public page's
    requests to loopback (Private Network Access), which is not what is tested here.
    """
    ours = "http://status.example.test"
    embedder = "http://intranet.example.test"
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Intranet</title></head><body>'
        f'<p>Status: <a data-status-embed href="{ours}/"><img src="{ours}/badge.svg" alt="Current status" '
        f'height="20"></a></p><script src="{ours}/static/js/status-embed.js" async></script></body></html>'
    )
    csp = (
        f"default-src 'none'; script-src {ours}; connect-src {ours}; img-src {ours}; "
        "style-src 'none'; base-uri 'none'; form-action 'none'"
    )
    seen: list[str] = []

    def proxy(route: Any) -> None:
        seen.append(route.request.url)
        route.fulfill(response=route.fetch(url=live_server.url + route.request.url[len(ours) :]))

    context, page = _open(browser, viewport="phone", js=True)
    problems = PageProblems(page)
    try:
        page.route(ours + "/**", proxy)
        page.route(
            embedder + "/",
            lambda route: route.fulfill(
                status=200, content_type="text/html", headers={"Content-Security-Policy": csp}, body=html
            ),
        )
        page.goto(embedder + "/")
        page.wait_for_function(
            "() => { const t = document.querySelector('[data-status-embed-text]');"
            " return !!t && t.textContent === 'All Systems Operational'; }",
            timeout=5000,
        )
        link = page.locator("[data-status-embed]")
        assert link.get_attribute("data-status-indicator") == "none"
        assert link.get_attribute("href") == f"{ours}/"
        assert f"{ours}/api/v2/status.json" in seen
        # A CSP violation would be a console error here.
        assert problems.errors == []
    finally:
        context.close()


def test_it_shows_the_badge_as_an_image(browser: Any, live_server: Any, demo: dict[str, str]) -> None:
    context, page = _open(browser, viewport="desktop", js=False)
    try:
        page.goto(live_server.url + "/badge.svg")
        size = page.evaluate("[document.documentElement.getAttribute('width'), document.title]")
        assert int(size[0]) > 100
        assert size[1] == "Status: All Systems Operational"
        page.screenshot(path="/work/screens/visitors/badge.png")
    finally:
        context.close()


def test_it_switches_times_to_the_visitors_zone_on_request(
    browser: Any, live_server: Any, demo: dict[str, str]
) -> None:
    context = browser.new_context(viewport=VIEWPORTS["desktop"], timezone_id="Europe/Berlin", locale="en-GB")
    page = context.new_page()
    problems = PageProblems(page)
    try:
        page.goto(live_server.url + demo["incident"])
        started = page.locator(".facts time").first
        page_text = started.inner_text()
        assert page_text.endswith(("PDT", "PST"))  # the page's zone by default
        assert page.locator("[data-tz-note]").inner_text() == "All times US/Pacific"
        page.locator("[data-tz-choice='local']").click()
        assert page.locator("[data-tz-note]").inner_text() == "All times Europe/Berlin"
        local_text = started.inner_text()
        assert local_text != page_text and (
            "CET" in local_text or "CEST" in local_text or "GMT+" in local_text
        )
        page.screenshot(path="/work/screens/visitors/incident-1280-local-zone.png", full_page=False)
        # Remembered without a cookie, and applied again on the next page.
        assert context.cookies() == []
        page.goto(live_server.url + "/")
        assert page.locator("[data-tz-note]").inner_text() == "All times Europe/Berlin"
        page.locator("[data-tz-choice='page']").click()
        assert page.locator("[data-tz-note]").inner_text() == "All times US/Pacific"
        assert problems.errors == []
    finally:
        context.close()


def test_it_keeps_the_page_zone_without_javascript(
    browser: Any, live_server: Any, demo: dict[str, str]
) -> None:
    context, page = _open(browser, viewport="phone", js=False)
    try:
        page.goto(live_server.url + demo["incident"])
        assert not page.locator("[data-tz-switch]").is_visible()
        assert "US/Pacific" in page.locator(".site-footer").inner_text()
    finally:
        context.close()


# --- French --------------------------------------------------------------------------------
# French strings are longer: the French pages must fit a 360 px phone as the English ones
# do, and a French browser opening `/` lands on /fr/.


def _french(browser: Any, *, js: bool = True) -> Any:
    context = browser.new_context(viewport=VIEWPORTS["phone"], java_script_enabled=js, locale="fr-FR")
    return context, context.new_page()


@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_it_fits_the_french_pages_on_a_phone(
    browser: Any, live_server: Any, demo: dict[str, str], js: bool
) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context, page = _french(browser, js=js)
    problems = PageProblems(page)
    try:
        response = page.goto(live_server.url + "/", wait_until="load")
        assert response is not None and response.status == 200
        assert page.url == live_server.url + "/fr/"  # Accept-Language: fr-FR
        for name in ("index", "incident"):
            path = "/fr" + demo[name]
            response = page.goto(live_server.url + path, wait_until="load")
            assert response is not None and response.status == 200, path
            assert page.evaluate("document.documentElement.lang") == "fr"
            page.screenshot(
                path=str(SCREENSHOTS / f"{name}-fr-phone-{'js' if js else 'nojs'}.png"), full_page=True
            )
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{path} is {overflow}px wider than a 360 px phone"
        assert "Durée totale" in (page.locator(".facts").text_content() or "")
        assert problems.errors == []
    finally:
        context.close()


def test_it_keeps_a_french_page_current_in_french(
    browser: Any, live_server: Any, demo: dict[str, str], live_settings: None
) -> None:
    from django.utils import timezone

    from incidents.models import Product
    from incidents.services import WindowSpec, incident_open, incident_resolve

    gmail = Product.objects.get(slug="gmail")
    context, page = _french(browser)
    problems = PageProblems(page)
    try:
        page.goto(live_server.url + "/fr/")
        _no_reload_marker(page)
        assert (
            page.locator("[data-banner-description]").inner_text() == "Tous les systèmes sont opérationnels"
        )
        incident = incident_open(
            title="Gmail cannot send mail",
            impact="critical",
            body="We are investigating failures to send mail.",
            windows=[WindowSpec(product=gmail, level="major_outage", started_at=timezone.now())],
        )
        _wait_text(page, "[data-live='incidents']", "Gmail cannot send mail")
        assert "Incidents en cours" in page.locator("[data-live='incidents']").inner_text()
        assert "Analyse en cours" in page.locator("[data-live='incidents'] .badge--status").first.inner_text()
        assert page.locator("[data-banner-description]").inner_text() == "Panne majeure"
        incident_resolve(incident=incident, body="Mail flows again.")
        _wait_text(page, "[data-banner-description]", "Tous les systèmes sont opérationnels")
        assert "Résolu" in page.locator("[data-live='recent'] .recent__day").first.inner_text()
        assert page.evaluate("document.documentElement.lang") == "fr"
        _assert_not_reloaded(page)
        assert problems.errors == []
    finally:
        context.close()
