"""The update screens in real Chromium (issue 28), at 390 px without JavaScript and at
1280 px by keyboard only: several products in one update, an internal level change, a
refused resolve, and the correction of a published update with its history. Every page
is checked for sideways scrolling and the accessibility basics, and screenshotted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from incidents import services
from incidents.models import ImpactWindow, Incident, IncidentNote
from tests.builders import make_group, make_location, make_product
from tests.console.test_browser import _login, _submit, browser, check_console_page, staff  # noqa: F401 - fixtures
from tests.public.browsing import PageProblems

pytestmark = [pytest.mark.browser, pytest.mark.services]

Level = ImpactWindow.Level


def _tab_to(page: Any, selector: str, *, limit: int = 200) -> None:
    """Press Tab until `selector` has the focus, as a keyboard user would."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} cannot be reached with Tab")


def _world() -> dict[str, Any]:
    cloud = make_group("Cloud")
    storage = make_product("Cloud Storage", group=cloud, position=1)
    incident = services.incident_open(
        title="Cloud Storage and Compute errors",
        impact=Incident.Impact.MAJOR,
        started_at=timezone.now() - timedelta(hours=2),
        body="We are investigating errors in **Cloud Strage**.",
        windows=[
            services.WindowSpec(
                product=storage, level=Level.PARTIAL_OUTAGE, started_at=timezone.now() - timedelta(hours=2)
            )
        ],
    )
    return {
        "incident": incident,
        "storage": storage,
        "compute": make_product("Compute Engine", group=cloud, position=2),
        "bigquery": make_product("BigQuery", group=cloud, position=3),
        "central": make_location("us-central1"),
        "east": make_location("us-east1"),
    }


@pytest.mark.parametrize(
    ("viewport", "js"), [("phone", False), ("desktop", True)], ids=["390-nojs", "1280-keys"]
)
def test_it_runs_the_update_screens(
    browser: Any,  # noqa: F811
    live_server: Any,
    staff: User,  # noqa: F811
    viewport: str,
    js: bool,
) -> None:
    world = _world()
    incident: Incident = world["incident"]
    suffix = "nojs" if not js else "js"
    context, page = _login(browser, live_server, viewport=viewport, js=js)
    problems = PageProblems(page)
    incident_url = f"{live_server.url}/manage/incidents/{incident.public_id}/"
    try:
        # 1. One public update adds two products, each with its own location and level.
        page.goto(incident_url + "update/")
        page.fill("#id_body", "Compute Engine and BigQuery are affected too.")
        page.select_option("#id_add_product_1", label="Compute Engine")
        page.select_option("#id_add_location_1", label="us-central1")
        page.select_option("#id_add_level_1", Level.MAJOR_OUTAGE)
        page.select_option("#id_add_product_2", label="BigQuery")
        page.select_option("#id_add_level_2", Level.DEGRADED_PERFORMANCE)
        check_console_page(page, name=f"update-products-{suffix}", viewport=viewport)
        _submit(page, "button[name=_post]", f"**/manage/incidents/{incident.public_id}/")
        added = {(w.product.name, w.location_id, w.level) for w in incident.windows.select_related("product")}
        assert added == {
            ("Cloud Storage", None, Level.PARTIAL_OUTAGE),
            ("Compute Engine", world["central"].pk, Level.MAJOR_OUTAGE),
            ("BigQuery", None, Level.DEGRADED_PERFORMANCE),
        }

        # 2. An internal level change: no public post, a staff note.
        page.goto(incident_url + "update/")
        page.check("#id_kind_1")
        page.select_option(f"#id_level_{world['compute'].pk}_{world['central'].pk}", Level.PARTIAL_OUTAGE)
        page.fill("#id_note", "Failover to us-east1 done; not worth a public post.")
        check_console_page(page, name=f"update-internal-{suffix}", viewport=viewport)
        _submit(page, "button[name=_post]", f"**/manage/incidents/{incident.public_id}/")
        assert incident.updates.count() == 2
        assert IncidentNote.objects.get(incident=incident).body.startswith("Failover")
        assert "Failover to us-east1 done" in page.locator("main").inner_text()
        check_console_page(page, name=f"incident-notes-{suffix}", viewport=viewport)

        # 3. Resolving with a level left non-operational is refused, clearly.
        page.goto(incident_url + "update/?resolve=1")
        page.fill("#id_body", "Resolved.")
        page.select_option(f"#id_level_{world['storage'].pk}_0", Level.DEGRADED_PERFORMANCE)
        with page.expect_navigation():
            page.click("button[name=_post]")
        assert "Resolving ends every impact" in page.locator(".form-errors").inner_text()
        check_console_page(page, name=f"resolve-error-{suffix}", viewport=viewport)
        incident.refresh_from_db()
        assert not incident.is_closed

        # 4. Correct the first update; the history keeps the earlier text.
        first = incident.updates.order_by("id").first()
        assert first is not None
        page.goto(incident_url)
        edit_link = f"a[href$='/updates/{first.pk}/edit/']"
        if js:  # keyboard only
            _tab_to(page, edit_link)
            with page.expect_navigation():
                page.keyboard.press("Enter")
            _tab_to(page, "#id_body")
            page.keyboard.press("Control+A")
            page.keyboard.type("We are investigating errors in **Cloud Storage**.")
            _tab_to(page, "button[name=_save]")
            with page.expect_navigation():
                page.keyboard.press("Enter")
        else:
            page.click(edit_link)
            page.fill("#id_body", "We are investigating errors in **Cloud Storage**.")
            _submit(
                page, "button[name=_save]", f"**/manage/incidents/{incident.public_id}/#update-{first.pk}"
            )
        first.refresh_from_db()
        assert first.body == "We are investigating errors in **Cloud Storage**."
        assert first.edited_at is not None
        page.goto(incident_url + f"updates/{first.pk}/edit/")
        assert "Cloud Strage" in page.locator("section[aria-labelledby=history-title]").inner_text()
        check_console_page(page, name=f"update-edit-{suffix}", viewport=viewport)
        assert problems.errors == []
    finally:
        context.close()
