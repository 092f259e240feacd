"""The credits console in real Chromium at 1280 and 390 px: review, explanation, letter
preview and confirmation, each checked for sideways scrolling and the accessibility basics
and screenshotted into /work/screens/credits/ for people to look at; then a send through
the confirmation page."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from credits import services
from credits.models import CreditNotice, NoticeState
from incidents.models import Incident, IncidentReport
from incidents.services.reports import report_publish, report_save
from outbox.models import OutboundMessage
from tests.builders import approve_report
from tests.console import test_browser as console_browser
from tests.console.test_browser import _login, browser, staff  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENS = Path(os.environ.get("CREDITS_SCREENS_DIR", "/work/screens/credits"))


@pytest.fixture
def demo_credits(staff: Any) -> list[CreditNotice]:  # noqa: F811
    call_command("load_demo", stdout=io.StringIO())
    for incident in Incident.objects.filter(title__icontains="Cloud Storage"):
        if not IncidentReport.objects.filter(
            incident=incident, status=IncidentReport.Status.PUBLISHED
        ).exists():
            report_save(
                incident=incident,
                summary="A configuration change overloaded the metadata service. Writes failed in one region.",
                root_cause="The change went to every zone of the region at once.",
                remediation="Such changes now go out one zone at a time and roll back on errors.",
            )
            if incident.is_closed:
                approve_report(incident)
                report_publish(incident=incident)
    for period in ("2009-09", "2026-10"):
        services.credits_compute(period=period)
    return list(CreditNotice.objects.select_related("customer").order_by("period", "customer__name"))


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_credits_console_pages(
    browser: Any,  # noqa: F811
    live_server: Any,
    demo_credits: list[CreditNotice],
    viewport: str,
    monkeypatch: Any,
    settings: Any,
) -> None:
    monkeypatch.setattr(console_browser, "SCREENS", SCREENS)
    # One person sends here; the demo month is above the four-eyes limit (tested in
    # tests/credits/test_roles_and_four_eyes.py).
    settings.CREDITS_SECOND_APPROVER_ABOVE = 0
    context, page = _login(browser, live_server, viewport=viewport)
    try:
        page.click("nav >> text=Credits")
        page.wait_for_url(f"{live_server.url}/manage/credits/")
        page.select_option("select[name=period]", "2026-10")
        page.click("text=Show")
        page.wait_for_url("**/manage/credits/?period=2026-10**")
        assert page.locator("table.credit-notices tbody tr").count() >= 1
        console_browser.check_console_page(page, name="credits-review", viewport=viewport)

        notice = max((n for n in demo_credits if n.period == "2026-10"), key=lambda n: n.downtime_minutes)
        page.goto(f"{live_server.url}/manage/credits/{notice.pk}/")
        shown = page.locator("[data-breakdown-total]").inner_text()
        assert shown == str(notice.downtime_minutes)
        console_browser.check_console_page(page, name="credits-explain", viewport=viewport)

        page.click("text=Preview the letter")
        page.wait_for_url(f"**/manage/credits/{notice.pk}/letter/")
        frame = page.frame_locator("iframe.letter-frame")
        assert "Your credit" in frame.locator("body").inner_text()
        assert "sorry" in page.locator("[data-letter-text]").inner_text()
        console_browser.check_console_page(page, name="credits-preview", viewport=viewport)

        page.goto(f"{live_server.url}/manage/credits/?period=2026-10")
        page.click("text=Review and send the selected")
        page.wait_for_url("**/manage/credits/confirm/**")
        count = int(page.locator("[data-confirm-count]").inner_text())
        assert count == CreditNotice.objects.filter(period="2026-10", state=NoticeState.COMPUTED).count()
        console_browser.check_console_page(page, name="credits-confirm", viewport=viewport)
        assert OutboundMessage.objects.count() == 0  # three pages in, still nothing sent
        if viewport == "desktop":
            page.click("button:has-text('letters now'), button:has-text('letter now')")
            page.wait_for_url(f"{live_server.url}/manage/credits/")
            assert OutboundMessage.objects.count() == count
    finally:
        context.close()
