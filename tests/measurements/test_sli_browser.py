"""SLI sources and reconciliation in real Chromium at 1280 and 390 px: an Integrations
member adds a source (a refused label selector first), tests its query and sees the last
day plotted; an administrator makes the suggested draft from the reconciliation. Every
page is checked for sideways scrolling and the accessibility basics, and screenshotted."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from incidents.models import ImpactWindow, Incident, Location
from measurements.models import SliSource
from tests.builders import make_incident, make_location, make_product
from tests.console.test_browser import A11Y_CHECK
from tests.measurements.prom import FIRST, run_prometheus
from tests.measurements.recent import recent_openmetrics
from tests.public.browsing import CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENS = Path(os.environ.get("SLI_SCREENS_DIR", "/work/shots/sli"))
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
PASSWORD = "sli-test-password"


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # The test's own ORM calls run beside Playwright's event loop (as tests/console/test_browser.py).
    mp = pytest.MonkeyPatch()
    mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            mp.undo()


@pytest.fixture(scope="module")
def recent_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from run_prometheus(Path(tmp_path_factory.mktemp("prometheus-recent")), recent_openmetrics())


@pytest.fixture(scope="module")
def incident_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from run_prometheus(Path(tmp_path_factory.mktemp("prometheus-incident")))


def _user(name: str, role: str) -> None:
    user = User.objects.create_user(name, f"{name}@example.org", PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name=role))


def _login(browser: Any, live_server: Any, name: str, viewport: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport=WIDTHS[viewport])
    page = context.new_page()
    page.goto(f"{live_server.url}/manage/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/manage/")
    return context, page


def _check(page: Any, name: str, viewport: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}-{WIDTHS[viewport]['width']}.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {WIDTHS[viewport]['width']}px"
    assert page.evaluate(A11Y_CHECK) == [], name


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_a_source_is_added_tested_and_plotted(
    browser: Any, live_server: Any, transactional_db: None, recent_prometheus: str, viewport: str
) -> None:
    make_product("Cloud Storage")
    make_location("us-central1")
    _user("ivy", "Integrations")
    context, page = _login(browser, live_server, "ivy", viewport)
    try:
        page.click("nav >> text=SLI sources")
        page.click("text=New source")
        page.select_option("#id_product", label="Cloud Storage")
        page.select_option("#id_location", label="us-central1")
        page.fill("#id_base_url", recent_prometheus)
        page.check("#id_kind_0")
        page.fill("#id_errors_query", "sum(increase(sli_errors_total{selector}[{window}]))")
        page.fill("#id_valid_query", "sum(increase(sli_requests_total{selector}[{window}]))")
        page.fill("#id_label_selector", "location=us-central1")
        page.click("text=Save the source")
        assert "Write label matchers" in page.inner_text("#id_label_selector ~ .field__error, .field--error")
        assert not SliSource.objects.exists()
        _check(page, "sli-form-error", viewport)
        page.fill("#id_label_selector", 'location="us-central1"')
        page.click("text=Save the source")
        page.wait_for_selector("text=Saved the SLI source")
        page.click("button:has-text('Test the query')")
        chart = page.locator("figure.sli-chart svg[role=img]:visible")
        chart.wait_for()
        assert page.locator("figure.sli-chart svg:visible polyline").count() == 1
        box = chart.bounding_box()
        assert box["width"] <= WIDTHS[viewport]["width"] and box["height"] > 50
        assert "Highest 30.000%" in page.inner_text("figure.sli-chart figcaption")
        _check(page, "sli-plot", viewport)
        page.click("nav >> text=SLI sources")
        assert "Cloud Storage in us-central1" in page.inner_text("main")
        _check(page, "sli-list", viewport)
    finally:
        context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_reconciliation_makes_the_suggested_draft(
    browser: Any, live_server: Any, transactional_db: None, incident_prometheus: str, viewport: str
) -> None:
    gcs = make_product("Cloud Storage")
    region = make_location("us-central1")
    SliSource.objects.create(
        product=gcs,
        location=region,
        base_url=incident_prometheus,
        errors_query="sum(increase(sli_errors_total{selector}[{window}]))",
        valid_query="sum(increase(sli_requests_total{selector}[{window}]))",
        label_selector='location="us-central1",variant="early"',
    )
    incident = make_incident(
        title="Cloud Storage elevated errors in us-central1",
        product=gcs,
        location=region,
        start=FIRST[0],
        end=FIRST[1],
        level=ImpactWindow.Level.PARTIAL_OUTAGE,
    )
    _user("ada", "Administrator")
    context, page = _login(browser, live_server, "ada", viewport)
    try:
        page.goto(f"{live_server.url}/manage/credits/reconcile/{incident.pk}/")
        assert "Measured, not declared: suggested draft incident" in page.inner_text("main")
        _check(page, "reconciliation", viewport)
        page.click("button:has-text('Make a draft incident')")
        page.wait_for_selector("text=Draft saved, not published")
        draft = Incident.objects.exclude(pk=incident.pk).get()
        assert not draft.is_public
        window = draft.windows.get()
        assert (window.started_at, window.ended_at) == (FIRST[0] - timedelta(minutes=20), FIRST[0])
        assert window.location_id == Location.objects.get(name="us-central1").pk
        _check(page, "reconciliation-draft-made", viewport)
    finally:
        context.close()
