"""The live page on the wire, in real Chromium against the live server (issue 30).

- Three open pages (`/`, a product page, an incident page) at the production settings
  (LIVE_REFRESH_SECONDS=5): changes made through the services are timed from the commit
  to the moment each page shows them; the 95th percentile must be within 10 s.
- An idle home tab: every byte it exchanges with the server over a minute (headers and
  bodies, from Playwright's request sizes) must stay under 5 KB.

The figures are printed (pytest -s) and recorded in bench/README.md.
"""

from __future__ import annotations

import math
import os
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from incidents.models import Product
from incidents.services import LevelSpec, WindowSpec, incident_open, incident_post_update_with_levels
from tests.public.browsing import PageProblems

pytestmark = [pytest.mark.browser, pytest.mark.services]

P95_LIMIT_S = 10.0
IDLE_LIMIT_BYTES_PER_MINUTE = 5000
CHANGES = 8
LEVELS = ["major_outage", "degraded_performance", "partial_outage"]
WATCH = """() => {
  window.__want = null;
  window.__seen = null;
  window.__shows = (want) => {
    const el = document.querySelector(want.selector);
    if (!el) { return false; }
    return want.attr ? el.getAttribute(want.attr) === want.value : el.textContent.includes(want.value);
  };
  document.addEventListener('statuspage:live-updated', () => {
    if (window.__want && window.__seen === null && window.__shows(window.__want)) { window.__seen = Date.now(); }
  });
}"""


@pytest.fixture
def production_live(settings: Any, transactional_db: None) -> None:
    # The shipped defaults, stated so that a change to them shows here.
    settings.LIVE_REFRESH_SECONDS = 5
    settings.LIVE_DOCUMENT_MAX_AGE = 2
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115


def _warm(url: str) -> None:
    """One plain request first: a cold render on a loaded machine may be answered 503
    while it finishes in the background (what issue 30's prerendering is about)."""
    for _attempt in range(20):
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                if answer.status == 200:
                    return
        except urllib.error.HTTPError:
            pass
        time.sleep(0.5)


def _open(browser: Any, url: str) -> tuple[Any, Any, PageProblems]:
    _warm(url)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    problems = PageProblems(page)
    page.goto(url)
    page.evaluate(WATCH)
    return context, page, problems


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _wait_all_seen(pages: dict[str, Any], timeout: float) -> dict[str, int | None]:
    deadline = time.monotonic() + timeout
    seen: dict[str, int | None] = {}
    while time.monotonic() < deadline:
        seen = {name: page.evaluate("window.__seen") for name, page in pages.items()}
        if all(value is not None for value in seen.values()):
            break
        time.sleep(0.2)
    return seen


def test_a_change_reaches_three_open_pages_within_ten_seconds_at_p95(
    browser: Any, live_server: Any, production_live: None
) -> None:
    drive = Product.objects.get(slug="drive")
    incident = incident_open(
        title="Drive uploads stall",
        impact="major",
        body="Uploads stall at 99%.",
        windows=[WindowSpec(product=drive, level="partial_outage", started_at=timezone.now())],
    )
    urls = {
        "home": "/",
        "product": "/products/drive/",
        "incident": f"/incidents/{incident.public_id}/",
    }
    opened = {name: _open(browser, live_server.url + url) for name, url in urls.items()}
    pages = {name: page for name, (_c, page, _p) in opened.items()}
    delays: dict[str, list[float]] = {name: [] for name in pages}
    try:
        for n in range(CHANGES):
            level, marker = LEVELS[n % len(LEVELS)], f"Change {n + 1} under way."
            wants = {
                "home": {"selector": "[data-live='incidents']", "value": marker},
                "product": {
                    "selector": "[data-live='product'] [data-status]",
                    "attr": "data-status",
                    "value": level,
                },
                "incident": {"selector": "[data-live='incident'] .timeline", "value": marker},
            }
            for name, page in pages.items():
                page.evaluate("(want) => { window.__seen = null; window.__want = want; }", wants[name])
            # Changes land at every phase of the 5 s poll, not in step with it.
            time.sleep(0.5 + (1.3 * n) % 5)
            made = time.time() * 1000
            incident_post_update_with_levels(
                incident=incident,
                status="identified",
                body=marker,
                levels=[LevelSpec(product=drive, level=level)],
            )
            seen = _wait_all_seen(pages, timeout=30)
            for name, when in seen.items():
                assert when is not None, (n, name, "never showed the change")
                delays[name].append((when - made) / 1000)
        every = [d for values in delays.values() for d in values]
        p95 = _p95(every)
        print(f"\nlive delays (s) over {CHANGES} changes x 3 pages:")
        for name, values in delays.items():
            print(f"  {name:8} " + " ".join(f"{v:.1f}" for v in values))
        print(f"  p50 {sorted(every)[len(every) // 2]:.1f} s, p95 {p95:.1f} s, max {max(every):.1f} s")
        assert p95 <= P95_LIMIT_S, (p95, delays)
        for name, (_context, _page, problems) in opened.items():
            assert problems.errors == [], (name, problems.errors)
    finally:
        for context, _page, _problems in opened.values():
            context.close()


def test_an_idle_home_tab_transfers_under_five_kilobytes_a_minute(
    browser: Any, live_server: Any, production_live: None
) -> None:
    context, page, problems = _open(browser, live_server.url + "/")
    finished: list[Any] = []
    counting = {"on": False}

    def record(request: Any) -> None:
        if counting["on"]:
            finished.append(request)

    try:
        page.on("requestfinished", record)
        page.wait_for_timeout(6000)  # the first poll and its sections question are over
        counting["on"] = True
        page.wait_for_timeout(60_000)
        counting["on"] = False
        down = up = 0
        kinds: dict[str, int] = {}
        for request in finished:
            sizes = request.sizes()
            down += sizes["responseHeadersSize"] + sizes["responseBodySize"]
            up += sizes["requestHeadersSize"] + sizes["requestBodySize"]
            path = request.url.split("?")[0].removeprefix(live_server.url)
            kinds[path] = kinds.get(path, 0) + 1
        print(f"\nidle home tab, 60 s: {len(finished)} requests {kinds}; received {down} B, sent {up} B")
        assert "/" not in kinds  # never the whole page
        assert down < IDLE_LIMIT_BYTES_PER_MINUTE, down
        assert problems.errors == []
    finally:
        context.close()
