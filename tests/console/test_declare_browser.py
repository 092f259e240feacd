"""Declare with locations per product, the duplicate-title warning, a backdated first
message and the Edit incident screen, in real Chromium at 1280 px (JavaScript on) and
390 px (JavaScript off, keyboard only on the Declare form)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command

from incidents import services
from incidents.models import ImpactWindow, Incident, Location, Product
from tests.console.test_browser import (  # noqa: F401 (browser and staff are fixtures)
    _login,
    _submit,
    _typed,
    browser,
    check_console_page,
    staff,
)

pytestmark = [pytest.mark.browser, pytest.mark.services]

Level = ImpactWindow.Level


def _tick_by_keyboard(page: Any, product: Product, locations: list[Location]) -> None:
    """Open the product's Locations disclosure and tick boxes with the keyboard only."""
    summary = page.locator(f"#id_level_{product.pk}_0 ~ details summary")
    summary.focus()
    page.keyboard.press("Enter")
    for location in locations:
        box = page.locator(f"input[name=locations_{product.pk}][value='{location.pk}']")
        box.focus()
        page.keyboard.press("Space")
        assert box.is_checked()


@pytest.mark.parametrize(
    ("viewport", "js"), [("desktop", True), ("phone", False)], ids=["1280-js", "390-nojs"]
)
def test_it_declares_with_locations_per_product_and_edits_the_incident(
    browser: Any,  # noqa: F811
    live_server: Any,
    staff: User,  # noqa: F811
    viewport: str,
    js: bool,
) -> None:
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    compute = Product.objects.get(slug="compute-engine")
    storage = Product.objects.get(slug="cloud-storage")
    central, east = Location.objects.get(name="us-central1"), Location.objects.get(name="us-east1")
    zone = ZoneInfo(settings.DISPLAY_TIME_ZONE)
    began = (datetime.now(zone) - timedelta(minutes=40)).replace(second=0, microsecond=0)
    suffix = "js" if js else "nojs"
    before = Incident.objects.count()
    context, page = _login(browser, live_server, viewport=viewport, js=js)
    try:
        page.goto(live_server.url + "/manage/declare/")
        page.fill("#id_title", "Compute Engine and Cloud Storage errors")
        page.fill("#id_started_at", _typed(began))
        page.select_option(f"#id_level_{compute.pk}_0", Level.MAJOR_OUTAGE)
        page.select_option(f"#id_level_{storage.pk}_0", Level.PARTIAL_OUTAGE)
        _tick_by_keyboard(page, storage, [central, east])
        if js:  # the summary names the ticked locations as they are ticked
            summary = page.locator(f"#id_level_{storage.pk}_0 ~ details [data-where-summary]")
            assert summary.inner_text() == "us-central1 (Iowa), us-east1 (South Carolina)"
        page.fill("#id_body", "We are investigating errors in Compute Engine and Cloud Storage.")
        page.fill("#id_first_update_at", _typed(began + timedelta(minutes=20)))
        check_console_page(page, name=f"i28-declare-{suffix}", viewport=viewport)
        # Someone else declared the same title a moment ago: a warning naming it, not a refusal.
        earlier = services.incident_declare(
            title="Compute Engine and Cloud Storage errors",
            body="Investigating.",
            windows=[services.WindowSpec(product=compute, level=Level.MAJOR_OUTAGE, started_at=began)],
            started_at=began,
        )
        page.click("button[name=_publish]")
        warning = page.locator(".form-warning")
        warning.wait_for()
        assert warning.locator(f"a[href='/manage/incidents/{earlier.public_id}/']").count() == 1
        assert Incident.objects.count() == before + 1
        # Everything typed is still there, per product locations included.
        assert page.locator(f"input[name=locations_{storage.pk}][value='{east.pk}']").is_checked()
        check_console_page(page, name=f"i28-declare-duplicate-{suffix}", viewport=viewport)
        page.locator("#id_confirm_duplicate_of").focus()
        page.keyboard.press("Space")
        _submit(page, "button[name=_publish]", "**/manage/incidents/*/")
        incident = Incident.objects.exclude(pk=earlier.pk).get(
            title="Compute Engine and Cloud Storage errors"
        )
        entry = incident.updates.get()
        assert entry.display_at == began + timedelta(minutes=20) < entry.created_at
        assert "shown as" in page.locator(".timeline__head").inner_text()
        windows = {(w.product.slug, w.location and w.location.name) for w in incident.windows.all()}
        assert windows == {
            ("compute-engine", None),
            ("cloud-storage", "us-central1"),
            ("cloud-storage", "us-east1"),
        }
        check_console_page(page, name=f"i28-incident-{suffix}", viewport=viewport)

        page.click("text=Edit incident")
        page.wait_for_url(f"**/manage/incidents/{incident.public_id}/edit/")
        page.fill("#id_title", "Compute Engine and Cloud Storage API errors")
        page.fill("#id_detected_at", _typed(began + timedelta(minutes=10)))
        check_console_page(page, name=f"i28-edit-{suffix}", viewport=viewport)
        _submit(page, "button[name=_save]", f"**/manage/incidents/{incident.public_id}/")
        incident.refresh_from_db()
        assert incident.title == "Compute Engine and Cloud Storage API errors"
        assert incident.detected_at == began + timedelta(minutes=10)
        # A refusal is shown on the form: detection before impact began.
        page.click("text=Edit incident")
        page.fill("#id_detected_at", _typed(began - timedelta(minutes=10)))
        page.click("button[name=_save]")
        page.locator(".field--error .field__error").first.wait_for()
        check_console_page(page, name=f"i28-edit-error-{suffix}", viewport=viewport)
    finally:
        context.close()
