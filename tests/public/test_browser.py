"""The public pages in real Chromium (Playwright): phone and desktop, JavaScript on and off.

Every page load fails the test on a console error or an uncaught page error (which also
catches Content-Security-Policy violations, such as an inline script), and on a page wider
than a 375 px phone. Screenshots go to test-artifacts/screenshots/ for people to look at.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from incidents.models import Incident

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
VIEWPORTS = {"phone": {"width": 375, "height": 812}, "desktop": {"width": 1280, "height": 800}}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls made by the
    # test itself are ordinary blocking calls, which Django would otherwise refuse. Set
    # only while these tests run, so it cannot leak into other tests' environments.
    mp = pytest.MonkeyPatch()
    mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request_cleanup = mp.undo
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            request_cleanup()


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


class PageProblems:
    """Collects console errors and uncaught exceptions of one page."""

    def __init__(self, page: Any, *, ignore: tuple[str, ...] = ()) -> None:
        self.errors: list[str] = []
        self.ignore = ignore
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))

    def _console(self, message: Any) -> None:
        if message.type == "error" and not any(part in message.text for part in self.ignore):
            self.errors.append(f"console: {message.text}")


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


def _summary(indicator: str, description: str, components: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "page": {"id": "x", "name": "Status", "url": "", "time_zone": "UTC", "updated_at": ""},
            "status": {"indicator": indicator, "description": description},
            "components": components,
            "incidents": [],
            "scheduled_maintenances": [],
        }
    )


def test_it_refreshes_statuses_from_the_summary_api(
    browser: Any, live_server: Any, demo: dict[str, str]
) -> None:
    from incidents.models import Product

    gmail = Product.objects.get(slug="gmail")
    context, page = _open(browser, viewport="desktop", js=True)
    problems = PageProblems(page)
    body = _summary(
        "critical",
        "Major System Outage",
        [{"id": gmail.public_id, "name": gmail.name, "status": "major_outage", "group": False}],
    )
    try:
        page.route(
            "**/api/v2/summary.json",
            lambda route: route.fulfill(status=200, content_type="application/json", body=body),
        )
        page.clock.install()
        page.goto(live_server.url + "/")
        page.clock.fast_forward(61_000)
        row = page.locator(f"[data-component-id='{gmail.public_id}']")
        page.wait_for_function(
            "id => document.querySelector(`[data-component-id='${id}'] [data-status]`)"
            ".getAttribute('data-status') === 'major_outage'",
            arg=gmail.public_id,
        )
        assert "Major outage" in row.locator("[data-component-status]").inner_text()
        assert page.locator("[data-banner-description]").inner_text() == "Major System Outage"
        assert problems.errors == []
    finally:
        context.close()


def test_it_keeps_the_page_when_the_summary_api_fails(
    browser: Any, live_server: Any, demo: dict[str, str]
) -> None:
    context, page = _open(browser, viewport="desktop", js=True)
    # The browser itself logs the failed request; the script must add nothing to it.
    problems = PageProblems(page, ignore=("Failed to load resource",))
    requests: list[str] = []
    try:
        page.on("request", lambda request: requests.append(request.url))
        page.route("**/api/v2/summary.json", lambda route: route.fulfill(status=503, body="down"))
        page.clock.install()
        page.goto(live_server.url + "/")
        before = page.locator("main").inner_text()
        page.clock.fast_forward(61_000)
        page.wait_for_timeout(300)
        assert any(url.endswith("/api/v2/summary.json") for url in requests)
        assert page.locator("main").inner_text() == before
        assert problems.errors == []
    finally:
        context.close()
