"""Issue 28, the finance journey in real Chromium at 1280 and 390 px, without the admin:
compute October 2026 from the console, review it (a very long customer name stays inside
its card), preview the letter (Reply-To shown), send, and read "Sent" in the audit log."""

from __future__ import annotations

import io
import os
from decimal import Decimal as D
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from credits import services
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState, SLAPolicy
from incidents.models import Location, Product
from tests.console import test_browser as console_browser
from tests.console.test_browser import _login, browser, staff  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENS = Path(os.environ.get("CREDITS_SCREENS_DIR", "/work/screens/credits"))
LONG_NAME = "Fabrikam-Global-Procurement-Services-International-Holdings-EMEA-Division-Accounts-Payable"


@pytest.fixture
def demo(staff: Any) -> None:  # noqa: F811
    call_command("load_demo", stdout=io.StringIO())
    customer = services.customer_create(
        name=LONG_NAME,
        billing_emails=["ap@fabrikam.example"],
        policy=SLAPolicy.objects.get(name__startswith="Cloud Storage"),
        monthly_bill=D("900.00"),
    )
    services.customer_entitle(
        customer=customer,
        product=Product.objects.get(name="Cloud Storage"),
        location=Location.objects.get(name="us-central1"),
    )


def _table_fits(page: Any) -> bool:
    return bool(
        page.evaluate(
            """() => {
                const table = document.querySelector('table.credit-notices').getBoundingClientRect();
                const card = document.querySelector('.credit-notices-panel').getBoundingClientRect();
                return table.right <= card.right + 0.5;
            }"""
        )
    )


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_finance_computes_reviews_previews_and_sends_october(
    browser: Any,  # noqa: F811
    live_server: Any,
    demo: None,
    viewport: str,
    monkeypatch: Any,
    settings: Any,
) -> None:
    monkeypatch.setattr(console_browser, "SCREENS", SCREENS)
    settings.CREDITS_SECOND_APPROVER_ABOVE = 0  # four eyes: tests/credits/test_roles_and_four_eyes.py
    settings.CREDITS_REPLY_TO = "billing@example.com"
    assert not CreditNotice.objects.exists()
    context, page = _login(browser, live_server, viewport=viewport)
    try:
        page.goto(f"{live_server.url}/manage/credits/")
        page.fill("#id_period", "2999-01")
        page.click("form.credit-compute button[type=submit]")
        assert "2999-01 has not started yet." in page.locator(".field__error").inner_text()
        assert not CreditNotice.objects.exists()

        page.fill("#id_period", "2026-10")
        page.click("form.credit-compute button[type=submit]")
        page.wait_for_url("**/manage/credits/?period=2026-10")
        assert "October 2026 computed" in page.locator(".console-messages").inner_text()
        assert CreditNotice.objects.filter(period="2026-10", state=NoticeState.COMPUTED).count() >= 2
        name = page.locator("a.credit-customer-name", has_text="Fabrikam")
        assert name.get_attribute("title") == LONG_NAME
        assert _table_fits(page)
        console_browser.check_console_page(page, name="finance-review", viewport=viewport)

        notice = CreditNotice.objects.get(customer__name=LONG_NAME)
        page.goto(f"{live_server.url}/manage/credits/{notice.pk}/letter/")
        assert page.locator("[data-letter-reply-to]").inner_text() == "billing@example.com"
        text = " ".join(page.locator("[data-letter-text]").inner_text().split())
        assert "replies go to our billing team at" in text and "weighted" not in text
        console_browser.check_console_page(page, name="finance-letter", viewport=viewport)

        if viewport == "desktop":
            page.goto(f"{live_server.url}/manage/credits/?period=2026-10")
            boxes = page.locator("table.credit-notices input[name=ids]")
            for i in range(boxes.count()):
                if LONG_NAME not in (boxes.nth(i).get_attribute("aria-label") or ""):
                    boxes.nth(i).uncheck()
            page.click("text=Review and send the selected")
            page.wait_for_url("**/manage/credits/confirm/**")
            page.click("button:has-text('letter now')")
            page.wait_for_url(f"{live_server.url}/manage/credits/")
            page.goto(f"{live_server.url}/manage/credits/?period=2026-10")
            audit = page.locator(".audit-list").inner_text()
            assert f"(outbox): Sent · {LONG_NAME}" in audit
            assert CreditAuditEntry.objects.filter(action=AuditAction.SENT, notice=notice).count() == 1
            console_browser.check_console_page(page, name="finance-sent", viewport=viewport)
    finally:
        context.close()
