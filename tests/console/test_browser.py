"""The console in real Chromium (Playwright): an incident run end to end at 1280 and 390 px.

Declare -> two updates that change product levels -> resolve -> report with action
items -> publish; after each level change the public page, /api/v2/components.json and
/api/v2/summary.json say it at once, and the month's SLA computation uses the windows the
updates made. Every console page is checked for sideways scrolling at 390 px and for
labels, headings, landmarks and colour contrast, and screenshotted for people to look at.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from console.models import MessageTemplate
from credits.models import CreditNotice
from credits.services import credits_compute
from incidents import services
from incidents.models import ActionItem, ImpactWindow, Incident, Product
from tests.builders import approve_report
from tests.credits.builders import customer, workspace_policy
from tests.public.browsing import CHROMIUM_ARGS, PageProblems
from tests.waiting import poll

pytestmark = [pytest.mark.browser, pytest.mark.services]

SCREENS = Path(os.environ.get("CONSOLE_SCREENS_DIR", "/work/screens/console"))
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
PASSWORD = "console-test-password"
Level = ImpactWindow.Level

# Runs in the page: what an accessibility reviewer checks first. Every form control has
# a label, one h1 and no skipped heading level, the four landmarks, and text contrast of
# at least 4.5:1 (3:1 for large text) against the background it is painted on.
A11Y_CHECK = """
() => {
  const problems = [];
  const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden" || el.type === "submit" || !visible(el)) continue;
    const named = (el.labels && el.labels.length) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!named) problems.push("unlabelled control " + (el.name || el.id));
  }
  const headings = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].filter(visible);
  if (headings.filter((h) => h.tagName === "H1").length !== 1) problems.push("not exactly one h1");
  let last = 0;
  for (const h of headings) {
    const level = Number(h.tagName[1]);
    if (level > last + 1) problems.push("heading skips to " + h.tagName + ": " + h.textContent.trim());
    last = level;
  }
  for (const sel of ["header", "nav", "main", "footer"]) {
    if (!document.querySelector(sel)) problems.push("no " + sel + " landmark");
  }
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c.length >= 3 && (c.length === 3 || c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!el || seen.has(el) || !walker.currentNode.textContent.trim() || !visible(el)) continue;
    if (el.closest(".sr-only, .skip-link, option")) continue;
    seen.add(el);
    const style = getComputedStyle(el);
    const fg = lum(rgb(style.color).slice(0, 3)), bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    if (ratio < (large ? 3 : 4.5)) problems.push("contrast " + ratio.toFixed(2) + " on: " + el.textContent.trim().slice(0, 40));
  }
  return problems;
}
"""


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls of the test
    # itself are ordinary blocking calls, which Django would otherwise refuse.
    mp = pytest.MonkeyPatch()
    mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            mp.undo()


@pytest.fixture
def staff(transactional_db: None) -> User:
    return User.objects.create_user("alice", "alice@example.org", PASSWORD, is_staff=True, is_superuser=True)


def _approver() -> User:
    """A second administrator, to publish what alice wrote (the author may not)."""
    user, created = User.objects.get_or_create(
        username="ophelia", defaults={"email": "ophelia@example.org", "is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_password(PASSWORD)
        user.save()
    return user


def _login(browser: Any, live_server: Any, *, viewport: str, js: bool = True) -> tuple[Any, Any]:
    context = browser.new_context(viewport=WIDTHS[viewport], java_script_enabled=js)
    page = context.new_page()
    page.goto(f"{live_server.url}/manage/")
    assert "/admin/login/" in page.url  # staff login through Django auth
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/manage/")
    return context, page


def check_console_page(page: Any, *, name: str, viewport: str) -> None:
    """No sideways scrolling, the accessibility basics, and a screenshot to look at."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}-{WIDTHS[viewport]['width']}.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {WIDTHS[viewport]['width']}px"
    assert page.evaluate(A11Y_CHECK) == [], name


def _public_state(
    browser: Any, live_server: Any, products: list[Product]
) -> tuple[dict[str, str], dict[str, str], dict[str, str], str]:
    """What an anonymous visitor sees (a fresh context each time: no browser cache)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(live_server.url + "/")
        on_page = {
            p.slug: page.locator(f"[data-component-id='{p.public_id}'] [data-status]").first.get_attribute(
                "data-status"
            )
            for p in products
        }
        components = context.request.get(live_server.url + "/api/v2/components.json").json()["components"]
        by_id = {c["id"]: c["status"] for c in components}
        summary = context.request.get(live_server.url + "/api/v2/summary.json").json()
        in_summary = {c["id"]: c["status"] for c in summary["components"]}
        return (
            on_page,
            {p.slug: by_id[p.public_id] for p in products},
            {p.slug: in_summary[p.public_id] for p in products},
            summary["status"]["indicator"],
        )
    finally:
        context.close()


def _assert_public(
    browser: Any, live_server: Any, products: list[Product], expected: dict[str, str], indicator: str
) -> None:
    # A rebuild that overruns its budget answers the previous page (marked stale) and
    # finishes in the background, so on a busy machine the change can take a moment.
    last: list[Any] = []

    def fresh() -> bool:
        last[:] = _public_state(browser, live_server, products)
        return tuple(last) == (expected, expected, expected, indicator)

    poll(fresh, timeout=10, interval=0.25)
    on_page, components, summary, shown = last
    assert on_page == expected, "public page"
    assert components == expected, "/api/v2/components.json"
    assert summary == expected, "/api/v2/summary.json"
    assert shown == indicator, "/api/v2/summary.json status.indicator"


def _submit(page: Any, button: str, url_glob: str) -> None:
    """Press a submit button and wait for the redirect; a refused form names its errors."""
    with page.expect_navigation():
        page.click(button)
    if not page.evaluate("() => !document.querySelector('.form-errors, .field__error')"):
        errors = page.locator(".form-errors, .field__error").all_inner_texts()
        raise AssertionError(f"the form was refused: {errors}")
    try:
        page.wait_for_url(url_glob, timeout=5000)
    except Exception as exc:
        raise AssertionError(f"ended at {page.url}: {page.locator('main').inner_text()[:600]}") from exc


def _typed(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M")


@pytest.mark.parametrize(
    ("viewport", "js"), [("desktop", True), ("phone", False)], ids=["1280-js", "390-nojs"]
)
def test_it_runs_an_incident_from_declaration_to_published_report(
    browser: Any, live_server: Any, staff: User, viewport: str, js: bool
) -> None:
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    gmail = Product.objects.get(slug="gmail")
    storage = Product.objects.get(slug="cloud-storage")
    products = [gmail, storage]
    zone = ZoneInfo(settings.DISPLAY_TIME_ZONE)
    # Two days ago, 09:00 to 12:00 in the display zone: inside one calendar month.
    day = (datetime.now(zone) - timedelta(days=2)).replace(hour=9, minute=0, second=0, microsecond=0)
    if day.month != (day + timedelta(hours=4)).month:  # pragma: no cover - never with 09:00
        day -= timedelta(days=1)
    t0, t1, t2, t3 = (day + timedelta(hours=h) for h in range(4))
    policy = workspace_policy(name="Console test policy")
    customer("Console Customer", policy=policy, products=[(gmail, None)])
    suffix = "js" if js else "nojs"
    context, page = _login(browser, live_server, viewport=viewport, js=js)
    problems = PageProblems(page)
    try:
        check_console_page(page, name=f"now-{suffix}", viewport=viewport)
        page.click("text=Declare an incident")
        page.fill("#id_title", "Gmail and Cloud Storage errors")
        page.select_option(f"#id_level_{gmail.pk}_0", Level.MAJOR_OUTAGE)
        page.select_option(f"#id_level_{storage.pk}_0", Level.PARTIAL_OUTAGE)
        page.fill("#id_started_at", _typed(t0))
        page.fill("#id_body", "We are investigating **errors** in Gmail and Cloud Storage.")
        if js:  # the live preview, rendered by the server as the public page renders it
            page.locator("[data-preview-body] strong", has_text="errors").wait_for()
        check_console_page(page, name=f"declare-{suffix}", viewport=viewport)
        _submit(page, "button[name=_publish]", "**/manage/incidents/*/")
        incident = Incident.objects.get(title="Gmail and Cloud Storage errors")
        assert incident.started_at == t0 and incident.is_public
        _assert_public(
            browser,
            live_server,
            products,
            {"gmail": "major_outage", "cloud-storage": "partial_outage"},
            "critical",
        )
        check_console_page(page, name=f"incident-{suffix}", viewport=viewport)

        # Update 1: identified; Gmail partial, Cloud Storage degraded, from t1.
        page.click("text=Post an update")
        page.select_option("#id_status", "identified")
        page.fill("#id_display_at", _typed(t1))
        page.select_option(f"#id_level_{gmail.pk}_0", Level.PARTIAL_OUTAGE)
        page.select_option(f"#id_level_{storage.pk}_0", Level.DEGRADED_PERFORMANCE)
        page.fill("#id_body", "A bad configuration push; rolling it back.")
        check_console_page(page, name=f"update-{suffix}", viewport=viewport)
        _submit(page, "button[name=_post]", f"**/manage/incidents/{incident.public_id}/")
        _assert_public(
            browser,
            live_server,
            products,
            {"gmail": "partial_outage", "cloud-storage": "degraded_performance"},
            "major",
        )

        # Update 2: monitoring; Gmail recovered at t2, Cloud Storage still degraded.
        page.click("text=Post an update")
        page.select_option("#id_status", "monitoring")
        page.fill("#id_display_at", _typed(t2))
        page.select_option(f"#id_level_{gmail.pk}_0", "operational")
        page.fill("#id_body", "Gmail has recovered; Cloud Storage is still slow.")
        _submit(page, "button[name=_post]", f"**/manage/incidents/{incident.public_id}/")
        _assert_public(
            browser,
            live_server,
            products,
            {"gmail": "operational", "cloud-storage": "degraded_performance"},
            "minor",
        )

        # Resolve at t3: everything operational.
        page.click("a:has-text('Resolve')")
        page.fill("#id_display_at", _typed(t3))
        page.fill("#id_body", "Resolved: writes are back to normal.")
        check_console_page(page, name=f"resolve-{suffix}", viewport=viewport)
        _submit(page, "button[name=_post]", f"**/manage/incidents/{incident.public_id}/")
        _assert_public(
            browser, live_server, products, {"gmail": "operational", "cloud-storage": "operational"}, "none"
        )
        check_console_page(page, name=f"resolved-incident-{suffix}", viewport=viewport)

        # The windows are what staff said, and the month's SLA uses them: Gmail was down
        # (major, then partial; both count under this policy) from t0 to t2, 120 minutes,
        # not the 180 minutes to the resolution.
        windows = [
            (w.product.slug, w.level, w.started_at, w.ended_at)
            for w in incident.windows.order_by("product__position", "started_at")
        ]
        assert [w for w in windows if w[0] == "gmail"] == [
            ("gmail", Level.MAJOR_OUTAGE, t0, t1),
            ("gmail", Level.PARTIAL_OUTAGE, t1, t2),
        ]
        credits_compute(period=f"{t0:%Y-%m}")
        notice = CreditNotice.objects.get(customer__name="Console Customer")
        assert notice.downtime_minutes >= Decimal(120)
        assert incident in notice.incidents.all()
        only_this = notice.downtime_minutes - _other_downtime(gmail, t0, incident)
        assert only_this == Decimal(120)

        # The report with one action item: preview, then publish.
        page.click("text=Write the report")
        page.check("input[name=kind][value=full]")
        page.fill("#id_summary", "Gmail and Cloud Storage returned **errors** for two hours.")
        page.fill("#id_root_cause", "A configuration push with a bad quota.")
        page.fill("#id_remediation", "Rolled back; pushes are now canaried.")
        page.fill("#id_items-0-title", "Canary configuration pushes")
        page.select_option("#id_items-0-priority", "P1")
        page.select_option("#id_items-0-owner", label="alice")
        page.fill("#id_items-0-due_date", (t3 + timedelta(days=14)).strftime("%Y-%m-%d"))
        page.fill("#id_items-0-tracker_url", "https://tracker.example.org/4711")
        page.check("#id_items-0-is_public")
        _submit(page, "button[name=_save]", "**/report/#preview")
        preview = page.locator(".public-preview")
        assert "Canary configuration pushes" in preview.inner_text()
        assert preview.locator("strong", has_text="errors").count() == 1
        check_console_page(page, name=f"report-{suffix}", viewport=viewport)
        # Review (ADR 0021): approved, then published by an approver who is not the author.
        approve_report(incident)
        approver_context = browser.new_context(viewport=WIDTHS[viewport])
        try:
            approver_page = approver_context.new_page()
            approver_page.goto(f"{live_server.url}/admin/login/?next=/manage/")
            approver_page.fill("#id_username", _approver().username)
            approver_page.fill("#id_password", PASSWORD)
            approver_page.click("input[type=submit]")
            approver_page.wait_for_url(f"{live_server.url}/manage/")
            approver_page.goto(f"{live_server.url}/manage/incidents/{incident.public_id}/report/")
            _submit(approver_page, "button[name=_publish]", f"**/manage/incidents/{incident.public_id}/*")
        finally:
            approver_context.close()
        incident.refresh_from_db()
        assert incident.status == "postmortem"
        item = ActionItem.objects.get(incident=incident)
        assert (item.owner, item.priority, item.is_public) == (staff, "P1", True)

        anonymous = browser.new_context(viewport=WIDTHS[viewport])
        try:
            public = anonymous.new_page()
            public.goto(f"{live_server.url}/incidents/{incident.public_id}/")
            report = public.locator(".report")
            assert "Canary configuration pushes" in report.inner_text()
            assert "https://tracker.example.org" not in public.content()  # staff-only detail
            assert (
                "Resolved: writes are back to normal."
                in public.locator(".timeline:not(.timeline--report)").inner_text()
            )
        finally:
            anonymous.close()
        assert problems.errors == []
    finally:
        context.close()


def _other_downtime(gmail: Product, t0: datetime, incident: Incident) -> Decimal:
    """Gmail downtime in the same month from other (demo) incidents, if any."""
    from credits.sla import Period

    start, end = Period.parse(f"{t0:%Y-%m}").bounds("US/Pacific")
    # Published incidents only, as credits count them (a suggested draft from a dependency does not).
    others = ImpactWindow.objects.filter(product=gmail, started_at__lt=end, incident__is_public=True).exclude(
        incident=incident
    )
    minutes = Decimal(0)
    for w in others.filter(level__in=[Level.MAJOR_OUTAGE, Level.PARTIAL_OUTAGE]):
        if w.ended_at is not None and w.ended_at <= start:
            continue
        s, e = max(w.started_at, start), min(w.ended_at or end, end)
        minutes += Decimal((e - s).total_seconds()) / 60
    return minutes


@pytest.mark.parametrize("viewport", ["phone", "desktop"])
def test_no_console_page_scrolls_sideways_and_each_passes_the_accessibility_check(
    browser: Any, live_server: Any, staff: User, viewport: str
) -> None:
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    storage = Product.objects.get(slug="cloud-storage")
    started = timezone.now() - timedelta(hours=2)
    ongoing = services.incident_open(
        title="Cloud Storage write errors in us-central1 with a title long enough to wrap on a phone",
        started_at=started,
        impact=Incident.Impact.MAJOR,
        body="We are investigating.",
        windows=[
            services.WindowSpec(product=storage, level=Level.PARTIAL_OUTAGE, started_at=started),
            services.WindowSpec(
                product=Product.objects.get(slug="gmail"),
                level=Level.DEGRADED_PERFORMANCE,
                started_at=started,
            ),
        ],
    )
    services.incident_open(title="A draft nobody sees yet", started_at=started, is_public=False)
    resolved = Incident.objects.filter(status="postmortem").first()
    assert resolved is not None
    template = MessageTemplate.objects.create(
        name="Elevated error rates",
        kind="incident",
        title="Elevated error rates",
        body="We are looking into it.",
    )
    ActionItem.objects.create(
        incident=resolved,
        title="An overdue follow-up with a long title",
        due_date=datetime(2020, 1, 1).date(),
    )
    pages = {
        "now": "/manage/",
        "declare": f"/manage/declare/?template={template.pk}",
        "incident-open": f"/manage/incidents/{ongoing.public_id}/",
        "update-open": f"/manage/incidents/{ongoing.public_id}/update/",
        "incident-report-published": f"/manage/incidents/{resolved.public_id}/",
        "report-published": f"/manage/incidents/{resolved.public_id}/report/",
        "templates": "/manage/templates/",
        "template-edit": f"/manage/templates/{template.pk}/",
    }
    context, page = _login(browser, live_server, viewport=viewport)
    problems = PageProblems(page)
    try:
        for name, path in pages.items():
            response = page.goto(live_server.url + path)
            assert response is not None and response.status == 200, path
            check_console_page(page, name=f"demo-{name}", viewport=viewport)
        # Errors on a form are shown next to the fields, still within the width.
        page.goto(live_server.url + "/manage/declare/")
        page.click("button[name=_publish]")
        assert page.locator(".form-errors, .field__error").count() > 0
        check_console_page(page, name="declare-errors", viewport=viewport)
        # The checks are not vacuous: pale text and a too-wide box are caught.
        # (Set through the CSSOM: the CSP refuses inline style, as it should.)
        page.evaluate(
            "() => { const p = document.createElement('p'); p.textContent = 'pale';"
            " p.style.color = '#bbb'; p.style.width = '2000px'; document.querySelector('main').append(p); }"
        )
        assert any(problem.startswith("contrast") for problem in page.evaluate(A11Y_CHECK))
        with pytest.raises(AssertionError, match="scrolls sideways"):
            check_console_page(page, name="probe", viewport=viewport)
        (SCREENS / f"probe-{WIDTHS[viewport]['width']}.png").unlink()
        assert problems.errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", list(WIDTHS))
def test_it_shows_render_problems_on_the_now_page(
    browser: Any, live_server: Any, staff: User, viewport: str
) -> None:
    from edge.models import RenderProblem
    from edge.render_problems import render_problem_record

    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    incident = Incident.objects.filter(status="postmortem").first()
    assert incident is not None
    for _ in range(3):
        render_problem_record(
            kind=RenderProblem.Kind.PAGE,
            key="incident:test",
            label=f"/incidents/{incident.public_id}/",
            error=RuntimeError(
                "Invalid block tag on line 42: 'endblock', expected 'endif'. Did you forget to register or load this tag?"
            ),
        )
    render_problem_record(
        kind=RenderProblem.Kind.FEED_ENTRY,
        key=incident.public_id,
        label=f"{incident.title} ({incident.public_id})",
        error=ValueError("stored HTML could not be read: " + "x" * 120),
    )
    context, page = _login(browser, live_server, viewport=viewport)
    try:
        panel = page.locator("section.panel--problems")
        assert panel.locator("h2").inner_text() == "Render problems"
        assert "2 public pages or feed entries could not be rendered" in panel.inner_text()
        assert "3 times" in panel.inner_text() and f"/incidents/{incident.public_id}/" in panel.inner_text()
        check_console_page(page, name="now-render-problems", viewport=viewport)
    finally:
        context.close()


def test_it_is_usable_with_the_keyboard(browser: Any, live_server: Any, staff: User) -> None:
    context, page = _login(browser, live_server, viewport="desktop")
    try:
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent.trim()") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent.trim()") == "Declare an incident"
        page.keyboard.press("Enter")
        page.wait_for_url("**/manage/declare/")
        reached = []
        for _ in range(80):
            page.keyboard.press("Tab")
            reached.append(page.evaluate("document.activeElement.name || document.activeElement.id || ''"))
            if reached[-1] == "_publish":
                break
        assert "title" in reached and "body" in reached and reached[-1] == "_publish"
    finally:
        context.close()
