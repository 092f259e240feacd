"""The subscribe form in real Chromium, by keyboard only, with JavaScript on and off: the
channel chosen from its links, that channel's fields only, and after a refused form the
focus on the error summary, whose links lead to the fields."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from subscriptions.models import Subscriber
from tests.builders import make_product

pytestmark = [pytest.mark.browser, pytest.mark.services]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # The test's own ORM calls run beside Playwright's event loop (as tests/public/test_browser.py).
    mp = pytest.MonkeyPatch()
    mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            mp.undo()


def _tab_to(page: Any, text: str, *, limit: int = 40) -> None:
    """Press Tab until the focused element's text is `text`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == text:
            return
    raise AssertionError(f"Tab never reached {text!r}")


def _tab_to_field(page: Any, field_id: str, *, limit: int = 40) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if _focused(page) == field_id:
            return
    raise AssertionError(f"Tab never reached #{field_id}")


def _focused(page: Any) -> str:
    return str(page.evaluate("document.activeElement.id || document.activeElement.tagName"))


@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
def test_it_subscribes_a_slack_channel_by_keyboard(
    browser: Any, live_server: Any, transactional_db: None, settings: Any, js: bool
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    make_product("Gmail", position=1)
    context = browser.new_context(viewport={"width": 390, "height": 800}, java_script_enabled=js)
    page = context.new_page()
    errors: list[str] = []
    # Script errors and CSP refusals; the refused form's own 400 is expected.
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" and "(Bad Request)" not in m.text else None,
    )
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(live_server.url + "/subscribe/")
        assert page.locator("#id_time_zone").count() == 1 and page.locator("#id_url").count() == 0
        _tab_to(page, "Slack")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url.endswith("/subscribe/?channel=slack")
        # The Slack page: its URL and its owner's address, no time zone, no payload shape.
        assert page.locator("#id_url").count() == 1 and page.locator("#id_time_zone").count() == 0
        assert page.locator("#id_payload_format").count() == 0

        _tab_to_field(page, "id_url")
        page.keyboard.type("https://example.com/not-slack")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        # Refused: the focus is on the summary, not left on the page's body.
        assert _focused(page) == "error-summary"
        assert page.title().startswith("Error:")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.getAttribute('href')") == "#id_url"
        if js:  # following the link puts the focus in the field (without script: the view only)
            page.keyboard.press("Enter")
            assert _focused(page) == "id_url"
        page.locator("#id_url").focus()
        page.keyboard.press("Control+A")
        page.keyboard.type("https://hooks.slack.com/services/T0/B0/XYZ")
        _tab_to_field(page, "id_email")
        page.keyboard.type("ops@example.com")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url.endswith("/subscribe/sent/")
        assert page.locator("h1").inner_text() == "Confirm your subscription"
        subscriber = Subscriber.objects.get()
        assert (subscriber.kind, subscriber.url, subscriber.confirmed_at) == (
            "slack",
            "https://hooks.slack.com/services/T0/B0/XYZ",
            None,
        )
        assert errors == []
    finally:
        context.close()
