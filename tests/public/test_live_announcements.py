"""What a screen reader hears from an open live page (static/js/live.js): changes, once.

The pages poll every second here (LIVE_REFRESH_SECONDS=1) and ask for their changed
sections every second too (PUBLIC_CACHE_TTL=1 moves the version document's time bucket),
as an open page does every minute in production. The visitor has chosen their own time
zone, so the times on screen differ from the markup the server sends: the moments when
the page used to say "All Systems Operational" again. Each answer to a sections request
is counted (the statuspage:live-checked event), and every text the role="status" region
takes is recorded in the page.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from incidents.models import Incident, Product
from incidents.services import WindowSpec, incident_open, incident_post_update
from tests.public.browsing import PageProblems

pytestmark = [pytest.mark.browser, pytest.mark.services]

DEADLINE_MS = 5000  # one poll to notice, one re-read, slack for a loaded machine
RECORD = """() => {
  window.__said = [];
  window.__swaps = 0;
  const region = document.querySelector('[data-live-announce]');
  new MutationObserver(() => {
    const text = region.textContent.trim();
    if (text) { window.__said.push(text); }
  }).observe(region, {childList: true, characterData: true, subtree: true});
  document.addEventListener('statuspage:live-checked', () => { window.__swaps += 1; });
}"""


@pytest.fixture
def quick_live(settings: Any, transactional_db: None) -> None:
    settings.LIVE_REFRESH_SECONDS = 1
    settings.PUBLIC_CACHE_TTL = 1
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115


def _open(browser: Any, url: str) -> tuple[Any, Any, PageProblems]:
    context = browser.new_context(viewport={"width": 390, "height": 800}, timezone_id="Europe/Berlin")
    page = context.new_page()
    problems = PageProblems(page)
    page.goto(url)
    page.locator("[data-tz-choice='local']").click()
    page.evaluate(RECORD)
    return context, page, problems


def _said(page: Any) -> list[str]:
    return page.evaluate("window.__said")


def _wait_swaps(page: Any, count: int) -> None:
    """Until the page has asked for its changed sections `count` more times."""
    target = page.evaluate("window.__swaps") + count
    page.wait_for_function(f"() => window.__swaps >= {target}", timeout=DEADLINE_MS * count)


def _drive_incident(**kw: Any) -> Incident:
    return incident_open(
        title="Drive uploads stall",
        impact="major",
        body="Uploads stall at 99%.",
        windows=[
            WindowSpec(
                product=Product.objects.get(slug="drive"), level="partial_outage", started_at=timezone.now()
            )
        ],
        **kw,
    )


def test_it_announces_nothing_on_the_status_page_when_nothing_changed(
    browser: Any, live_server: Any, quick_live: None
) -> None:
    context, page, problems = _open(browser, live_server.url + "/")
    try:
        _wait_swaps(page, 3)
        assert _said(page) == []
        assert page.locator("[data-live-announce]").text_content() == ""
        assert problems.errors == []
    finally:
        context.close()


def test_it_announces_an_update_on_an_open_incident_page_once(
    browser: Any, live_server: Any, quick_live: None
) -> None:
    incident = _drive_incident()
    context, page, problems = _open(browser, f"{live_server.url}/incidents/{incident.public_id}/")
    try:
        _wait_swaps(page, 1)
        assert _said(page) == []

        incident_post_update(incident=incident, status="monitoring", body="A fix is out; watching uploads.")
        page.wait_for_function("() => window.__said.length > 0", timeout=DEADLINE_MS)
        assert "A fix is out" in page.locator("[data-live='incident'] .timeline").inner_text()
        _wait_swaps(page, 3)  # later re-reads, with nothing new, stay silent
        assert _said(page) == ["Monitoring. A fix is out; watching uploads."]
        assert problems.errors == []
    finally:
        context.close()


def test_it_announces_a_new_incident_on_the_status_page_once(
    browser: Any, live_server: Any, quick_live: None
) -> None:
    context, page, problems = _open(browser, live_server.url + "/")
    try:
        _wait_swaps(page, 1)
        _drive_incident()
        page.wait_for_function("() => window.__said.length > 0", timeout=DEADLINE_MS)
        _wait_swaps(page, 3)
        said = _said(page)
        assert len(said) == 1, said
        # The overall status first, then the new incident with its status and first words.
        banner = page.locator("[data-banner-description]").inner_text()
        assert banner != "All Systems Operational"
        assert said[0] == f"{banner}. Drive uploads stall. Investigating. Uploads stall at 99%."
        assert problems.errors == []
    finally:
        context.close()


def test_it_announces_a_products_new_status_on_its_page_once(
    browser: Any, live_server: Any, quick_live: None
) -> None:
    context, page, problems = _open(browser, live_server.url + "/fr/products/drive/")
    try:
        _wait_swaps(page, 1)
        _drive_incident()
        page.wait_for_function("() => window.__said.length > 0", timeout=DEADLINE_MS)
        _wait_swaps(page, 3)
        assert _said(page) == ["Google Drive. Panne partielle."]
        assert problems.errors == []
    finally:
        context.close()
