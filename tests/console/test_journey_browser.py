"""Issue 28's first acceptance point, replayed in real Chromium at 1280 px (JavaScript on)
and 390 px (JavaScript off): an incident commander's journey through the console, then a
finance reviewer's month of credits, asserting each "Truth" point of the issue on the way.

Commander: declare with different locations per product, one update adding two products,
an internal-only level change, a correction of a published update, a refused and then an
accepted resolve. Checked on the way: the first message is shown when it was posted; an
update dated before the start is refused with a time in the display zone; the incident
keeps its worst impact; the public Affected table keeps each product's locations;
back-to-back level changes are one period; the console mark is not the green check while
the incident is open; insights' time to the first public update is the real delay.

Finance: tests/console/test_credit_compute_browser.py already computes October 2026 from
the console, reviews it, previews the letter (Reply-To, no "weighted"), sends it and reads
"Sent" in the audit log. `test_finance_letter_and_send` replays that path with its setup
and asserts what it leaves out: the HTML letter, the incident address given once, no
policy name, text lines of 72 characters, the Reply-To header on the queued letter, and
"Sent" exactly once in the audit log shown on the page.

Screenshots of every step go to $CONSOLE_SCREENS_DIR/journey (default /tmp/console-screens).
"""

from __future__ import annotations

import csv
import io
import os
import re
import time
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from core.timezones import format_local
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState
from incidents.models import ImpactWindow, Incident, IncidentNote
from incidents.uptime import minutes
from insights.metrics import format_hours
from outbox.models import OutboundMessage
from subscriptions.models import NotificationEvent
from tests.builders import make_group, make_location, make_product
from tests.console import test_browser as console_browser
from tests.console.test_browser import _login, _submit, _typed, browser, staff  # noqa: F401 - fixtures
from tests.console.test_credit_compute_browser import LONG_NAME, demo  # noqa: F401 - fixture
from tests.public.browsing import PageProblems
from tests.subscriptions.builders import make_subscriber
from tests.waiting import poll

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENS = Path(os.environ.get("CONSOLE_SCREENS_DIR", "/tmp/console-screens")) / "journey"
Level = ImpactWindow.Level
SUBSCRIBER = "carol@example.com"
WIDTHS = [("desktop", True), ("phone", False)]
WIDTH_IDS = ["1280-js", "390-nojs"]


@pytest.fixture(autouse=True)
def _screens(monkeypatch: Any) -> None:
    monkeypatch.setattr(console_browser, "SCREENS", SCREENS)


def _shot(page: Any, name: str, viewport: str) -> None:
    """A console page: no sideways scrolling, the accessibility basics, a screenshot."""
    console_browser.check_console_page(page, name=name, viewport=viewport)


def _public_shot(page: Any, name: str, viewport: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(SCREENS / f"{name}-{console_browser.WIDTHS[viewport]['width']}.png"), full_page=True
    )
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0


def _world() -> dict[str, Any]:
    cloud = make_group("Cloud")
    make_subscriber(SUBSCRIBER)  # confirmed, every product
    return {
        "storage": make_product("Cloud Storage", group=cloud, position=1),
        "compute": make_product("Compute Engine", group=cloud, position=2),
        "bigquery": make_product("BigQuery", group=cloud, position=3),
        "sql": make_product("Cloud SQL", group=cloud, position=4),
        "central": make_location("us-central1"),
        "east": make_location("us-east1"),
    }


def _letters_to_subscriber() -> int:
    """Emails queued for the subscriber (the on-commit fan-out runs eagerly, in the request)."""
    return sum(1 for m in OutboundMessage.objects.filter(channel="email") if SUBSCRIBER in m.to)


def _mark(page: Any) -> str:
    """The console header's mark: the public page's rollup (icon--operational is the green check)."""
    classes = page.locator("header svg.brand__mark").get_attribute("class") or ""
    found = re.search(r"icon--([a-z_]+)", classes)
    assert found is not None, classes
    return found.group(1)


def _public(chromium: Any, live_server: Any, path: str, viewport: str) -> tuple[Any, Any]:
    """An anonymous visitor's page (a fresh context: nothing cached, not signed in).

    Under load the page cache may answer the previous copy, marked stale, while the fresh
    one renders (ADR 0003); a visitor's page catches up within seconds, so this reloads
    until the answer is fresh, for at most 20 s."""
    context = chromium.new_context(viewport=console_browser.WIDTHS[viewport])
    page = context.new_page()
    response = page.goto(live_server.url + path)
    deadline = time.monotonic() + 20
    while response is not None and response.headers.get("x-status-snapshot") and time.monotonic() < deadline:
        time.sleep(0.5)
        response = page.reload()
    return context, page


def _component_statuses(chromium: Any, live_server: Any) -> dict[str, str]:
    context = chromium.new_context()
    try:
        body = context.request.get(live_server.url + "/api/v2/components.json").json()
        return {c["name"]: c["status"] for c in body["components"]}
    finally:
        context.close()


def _affected(page: Any) -> dict[str, str]:
    rows = page.locator("section[aria-labelledby=affected-title] tbody tr")
    return {
        rows.nth(i).locator("th").inner_text().strip(): rows.nth(i).locator("td").first.inner_text().strip()
        for i in range(rows.count())
    }


@pytest.mark.parametrize(("viewport", "js"), WIDTHS, ids=WIDTH_IDS)
def test_commander_journey(
    browser: Any,  # noqa: F811
    live_server: Any,
    staff: User,  # noqa: F811
    viewport: str,
    js: bool,
) -> None:
    w = _world()
    zone = ZoneInfo(settings.DISPLAY_TIME_ZONE)
    began = (datetime.now(zone) - timedelta(minutes=20)).replace(second=0, microsecond=0)
    title = "Compute Engine and Cloud Storage errors"
    context, page = _login(browser, live_server, viewport=viewport, js=js)
    problems = PageProblems(page)
    try:
        assert _mark(page) == "operational"  # all is well: the green check (the contrast below)

        # 1. Declare: Compute Engine down everywhere, Cloud Storage only in us-central1.
        page.click("text=Declare an incident")
        page.fill("#id_title", title)
        page.fill("#id_started_at", _typed(began))
        page.select_option(f"#id_level_{w['compute'].pk}_0", Level.MAJOR_OUTAGE)
        page.select_option(f"#id_level_{w['storage'].pk}_0", Level.PARTIAL_OUTAGE)
        page.click(f"#id_level_{w['storage'].pk}_0 ~ details summary")
        page.check(f"input[name=locations_{w['storage'].pk}][value='{w['central'].pk}']")
        page.fill("#id_body", "We are investigating errors in Compute Engine and Cloud Storage.")
        _shot(page, "01-declare", viewport)
        _submit(page, "button[name=_publish]", "**/manage/incidents/*/")
        incident = Incident.objects.get(title=title)
        incident_url = f"{live_server.url}/manage/incidents/{incident.public_id}/"
        first = incident.updates.get()
        # Truth: shown when posted, not when impact began (20 minutes earlier).
        assert abs(first.display_at - first.created_at) < timedelta(seconds=60)
        assert first.display_at - incident.started_at > timedelta(minutes=19)
        assert "shown as" not in page.locator(".timeline__head").inner_text()
        assert incident.impact == Incident.Impact.CRITICAL
        assert {(x.product.name, x.location and x.location.name) for x in incident.windows.all()} == {
            ("Compute Engine", None),
            ("Cloud Storage", "us-central1"),
        }
        assert _letters_to_subscriber() == 1
        # Truth: the console mark is not the green check while a critical incident is open.
        assert _mark(page) == "major_outage"
        _shot(page, "02-declared", viewport)

        public, public_page = _public(browser, live_server, f"/incidents/{incident.public_id}/", viewport)
        try:
            shown = public_page.locator(".timeline__head time").first.get_attribute("datetime")
            assert datetime.fromisoformat(shown) == first.display_at
            assert _affected(public_page) == {
                "Compute Engine": "All locations",
                "Cloud Storage": "us-central1",
            }
            _public_shot(public_page, "03-public-declared", viewport)
        finally:
            public.close()

        # 2. Staff record when it was detected (5 minutes in): insights measure from there.
        page.click("text=Edit incident")
        page.fill("#id_detected_at", _typed(began + timedelta(minutes=5)))
        _shot(page, "04-edit-incident", viewport)
        _submit(page, "button[name=_save]", incident_url)

        # 3. Truth: an update dated before the start is refused, its time in the display zone.
        page.click("text=Post an update")
        page.fill("#id_display_at", _typed(began - timedelta(minutes=10)))
        page.fill("#id_body", "An update from before the incident began.")
        with page.expect_navigation():
            page.click("button[name=_post]")
        error = " ".join(page.locator(".form-errors, .field__error").all_inner_texts())
        assert format_local(incident.started_at) in error and "UTC" not in error, error
        assert incident.updates.count() == 1
        _shot(page, "05-update-before-start-refused", viewport)

        # 4. One update: Compute Engine recovers to partial outage, two products join at once.
        page.goto(incident_url + "update/")
        page.select_option("#id_status", "identified")
        page.fill("#id_body", "BigQuery in us-east1 and Cloud SQL are affected too.")
        page.select_option(f"#id_level_{w['compute'].pk}_0", Level.PARTIAL_OUTAGE)
        page.select_option("#id_add_product_1", label="BigQuery")
        page.select_option("#id_add_location_1", label="us-east1")
        page.select_option("#id_add_level_1", Level.DEGRADED_PERFORMANCE)
        page.select_option("#id_add_product_2", label="Cloud SQL")
        page.select_option("#id_add_level_2", Level.PARTIAL_OUTAGE)
        _shot(page, "06-update-two-products", viewport)
        _submit(page, "button[name=_post]", incident_url)
        incident.refresh_from_db()
        assert incident.impact == Incident.Impact.CRITICAL  # Truth: the worst stays (levels now say major)
        assert incident.updates.count() == 2 and _letters_to_subscriber() == 2
        assert {
            (x.product.name, x.location and x.location.name, x.level) for x in incident.windows.all()
        } >= {
            ("BigQuery", "us-east1", Level.DEGRADED_PERFORMANCE),
            ("Cloud SQL", None, Level.PARTIAL_OUTAGE),
        }

        # 5. An internal-only level change: levels move, no entry, nobody told.
        events = NotificationEvent.objects.count()
        page.goto(incident_url + "update/")
        page.check("#id_kind_1")
        page.select_option(f"#id_level_{w['compute'].pk}_0", Level.DEGRADED_PERFORMANCE)
        page.fill("#id_note", "Compute Engine failed over; not worth a public post.")
        _shot(page, "07-internal-level-change", viewport)
        _submit(page, "button[name=_post]", incident_url)
        assert incident.updates.count() == 2
        assert NotificationEvent.objects.count() == events and _letters_to_subscriber() == 2
        assert IncidentNote.objects.get(incident=incident).body.startswith("Compute Engine failed over")
        assert (
            "Compute Engine failed over" in page.locator("section[aria-labelledby=notes-title]").inner_text()
        )
        _shot(page, "08-incident-after-internal", viewport)
        poll(
            lambda: _component_statuses(browser, live_server)["Compute Engine"] == Level.DEGRADED_PERFORMANCE,
            timeout=10,
            interval=0.25,
        )
        public, public_page = _public(browser, live_server, f"/incidents/{incident.public_id}/", viewport)
        try:
            text = public_page.locator("main").inner_text()
            assert "failed over" not in text and public_page.locator(".timeline__item").count() == 2
            compute_rows = public_page.locator("tr.window", has_text="Compute Engine")
            assert compute_rows.count() == 3
            levels = {compute_rows.nth(i).locator("td").nth(1).inner_text().strip() for i in range(3)}
            assert levels == {"Major outage", "Partial outage", "Degraded performance"}  # back to back
            # Truth: back-to-back level changes are one stretch of impact, not several.
            assert "separate period" not in text and "separate window" not in text
            assert _affected(public_page) == {
                "Cloud Storage": "us-central1",
                "Compute Engine": "All locations",
                "BigQuery": "us-east1",
                "Cloud SQL": "All locations",
            }
            _public_shot(public_page, "09-public-after-internal", viewport)
        finally:
            public.close()

        # 6. Correct the first published update: "edited" publicly, the history for staff.
        page.click(f"a[href$='/updates/{first.pk}/edit/']")
        page.fill("#id_body", "We are investigating errors in Compute Engine and Cloud Storage writes.")
        _submit(page, "button[name=_save]", f"**/manage/incidents/{incident.public_id}/*")
        page.goto(incident_url + f"updates/{first.pk}/edit/")
        history = page.locator("section[aria-labelledby=history-title]").inner_text()
        assert "We are investigating errors in Compute Engine and Cloud Storage." in history
        _shot(page, "10-update-revision", viewport)
        assert _letters_to_subscriber() == 2  # a correction is not news
        public, public_page = _public(browser, live_server, f"/incidents/{incident.public_id}/", viewport)
        try:
            oldest = public_page.locator(".timeline__item").last
            assert "Cloud Storage writes." in oldest.inner_text()
            assert oldest.locator(".edited").count() == 1
            _public_shot(public_page, "11-public-edited", viewport)
        finally:
            public.close()

        # 7. Resolve: a level left impaired is refused; then everything operational.
        page.goto(incident_url + "update/?resolve=1")
        page.fill("#id_body", "Resolved: errors are back to normal.")
        page.select_option(f"#id_level_{w['compute'].pk}_0", Level.DEGRADED_PERFORMANCE)
        with page.expect_navigation():
            page.click("button[name=_post]")
        assert "Resolving ends every impact" in page.locator(".form-errors").inner_text()
        _shot(page, "12-resolve-refused", viewport)
        incident.refresh_from_db()
        assert not incident.is_closed
        page.select_option(f"#id_level_{w['compute'].pk}_0", "operational")
        chosen = Incident.Impact.MAJOR if js else ""  # 1280: a final impact; 390: keep the worst
        page.select_option("#id_impact", chosen)
        _shot(page, "13-resolve", viewport)
        _submit(page, "button[name=_post]", incident_url)
        incident.refresh_from_db()
        assert incident.is_closed and _letters_to_subscriber() == 3
        assert incident.impact == (Incident.Impact.MAJOR if js else Incident.Impact.CRITICAL)
        assert _mark(page) == "operational"
        _shot(page, "14-resolved", viewport)
        public, public_page = _public(browser, live_server, f"/incidents/{incident.public_id}/", viewport)
        try:
            # Truth: the resolved incident names the worst it reached (Compute Engine's major outage).
            assert public_page.locator(".incident__header .card__badges").inner_text().split() == [
                "Resolved",
                "Major",
                "outage",
            ]
            assert "separate period" not in public_page.locator("main").inner_text()
            _public_shot(public_page, "15-public-resolved", viewport)
        finally:
            public.close()

        # 8. Insights: time to the first public update = its posting time minus the detection.
        incident.refresh_from_db()
        expected = first.created_at - incident.detected_at
        assert expected > timedelta(minutes=10)  # declared 20 minutes after the start, detected at 5
        csv_url = f"{live_server.url}/manage/insights/incidents.csv"
        rows = list(csv.DictReader(io.StringIO(context.request.get(csv_url).text())))
        row = next(r for r in rows if r["incident"] == incident.public_id)
        assert Decimal(row["time_to_first_update_minutes"]) == minutes(expected).quantize(Decimal("0.01"))
        page.goto(f"{live_server.url}/manage/insights/")
        cell = page.locator("tr", has=page.locator("th a", has_text=title)).locator(
            "td[data-label='To first update']"
        )
        assert cell.first.inner_text().strip() == format_hours(expected)
        _shot(page, "16-insights", viewport)
        assert problems.errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_finance_letter_and_send(
    browser: Any,  # noqa: F811
    live_server: Any,
    demo: None,  # noqa: F811
    viewport: str,
    settings: Any,
) -> None:
    settings.CREDITS_SECOND_APPROVER_ABOVE = 0  # four eyes: tests/credits/test_roles_and_four_eyes.py
    settings.CREDITS_REPLY_TO = "billing@example.com"
    context, page = _login(browser, live_server, viewport=viewport, js=viewport == "desktop")
    try:
        page.goto(f"{live_server.url}/manage/credits/")
        page.fill("#id_period", "2026-10")
        page.click("form.credit-compute button[type=submit]")
        page.wait_for_url("**/manage/credits/?period=2026-10")
        _shot(page, "20-credits-computed", viewport)
        notice = CreditNotice.objects.get(customer__name=LONG_NAME)
        incident = notice.incidents.get()
        address = f"/incidents/{incident.public_id}/"

        page.goto(f"{live_server.url}/manage/credits/{notice.pk}/letter/")
        _shot(page, "21-letter", viewport)
        text = page.locator("[data-letter-text]").inner_text()
        assert text.count(address) == 1
        assert notice.policy.name not in text and "weighted" not in text.lower()
        long_lines = [line for line in text.splitlines() if len(line) > 72 and "://" not in line]
        assert long_lines == [] or all(line.startswith(("Dear", "Hello")) for line in long_lines), long_lines
        page.goto(f"{live_server.url}/manage/credits/{notice.pk}/letter.html")
        html_text = page.locator("body").inner_text()
        assert notice.policy.name not in html_text and "weighted" not in html_text.lower()
        assert page.locator(f"a[href$='{address}']").count() == 1
        _public_shot(page, "22-letter-html", viewport)

        page.goto(f"{live_server.url}/manage/credits/?period=2026-10")
        boxes = page.locator("table.credit-notices input[name=ids]")
        for i in range(boxes.count()):
            if LONG_NAME not in (boxes.nth(i).get_attribute("aria-label") or ""):
                boxes.nth(i).uncheck()
        page.click("text=Review and send the selected")
        page.wait_for_url("**/manage/credits/confirm/**")
        _shot(page, "23-credits-confirm", viewport)
        page.click("button:has-text('letter now')")
        page.wait_for_url(f"{live_server.url}/manage/credits/")
        notice.refresh_from_db()
        assert notice.state == NoticeState.SENT
        letter = OutboundMessage.objects.get(ref=f"notice:{notice.pk}")
        assert letter.state == OutboundMessage.State.SENT
        assert letter.headers.get("Reply-To") == "billing@example.com"
        page.goto(f"{live_server.url}/manage/credits/?period=2026-10")
        audit = page.locator(".audit-list").inner_text()
        assert audit.count(f"Sent · {LONG_NAME}") == 1, audit
        assert CreditAuditEntry.objects.filter(action=AuditAction.SENT, notice=notice).count() == 1
        _shot(page, "24-credits-sent", viewport)
    finally:
        context.close()
