"""The page subscribe page in Chromium: a signed-in contact subscribes by email and adds a
webhook, in both languages, at a phone's and a desktop's width, with no serious axe
violation and nothing wider than the screen."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.sessions.backends.db import SessionStore

from audiences import services as audience_services
from audiences.models import Page
from audiences.selectors import SESSION_CUSTOMER, SESSION_EMAIL
from credits import services as credit_services
from portal.models import PageSubscriber, PortalAccess
from tests.builders import make_location, make_product
from tests.public.browsing import PageProblems
from tests.public.conftest import browser  # noqa: F401
from tests.public.test_axe import _readable, _violations, axe_source  # noqa: F401

CONTACT = "ops@tailspin.example"


@pytest.fixture
def signed_in(transactional_db: None, settings: Any) -> str:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_ALLOW_HTTP = True
    customer = credit_services.customer_create(name="Tailspin", billing_emails=["ap@tailspin.example"])
    PortalAccess.objects.create(customer=customer, domain="tailspin.example")
    audience_services.page_save(
        actor=None,
        slug="tailspin",
        title="Tailspin Toys: Cloud Storage in us-central1",
        visibility=Page.Visibility.AUDIENCE,
        products=[make_product("Cloud Storage", slug="cloud-storage")],
        locations=[make_location("us-central1")],
        customers=[customer],
    )
    session = SessionStore()
    session[SESSION_CUSTOMER] = customer.pk
    session[SESSION_EMAIL] = CONTACT
    session.create()
    return str(session.session_key)


@pytest.mark.browser
@pytest.mark.services
@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_contact_subscribes_in_the_browser(
    browser: Any,  # noqa: F811
    axe_source: str,  # noqa: F811
    live_server: Any,
    signed_in: str,
    language: str,
) -> None:
    prefix = "" if language == "en" else "/fr"
    url = f"{live_server.url}{prefix}/portal/pages/tailspin/subscribe/"
    found: list[str] = []
    for width in (390, 1280):
        context = browser.new_context(viewport={"width": width, "height": 800})
        context.add_cookies([{"name": "sessionid", "value": signed_in, "url": live_server.url}])
        page = context.new_page()
        problems = PageProblems(page)
        page.goto(url)
        if width == 390:
            page.locator("form:has(input[value=email]) button").click()
            page.wait_for_load_state("load")
            page.locator("input[name=url]").fill(f"http://127.0.0.1:9/hook-{language}")
            page.locator("form:has(input[value=webhook]) button").click()
            page.wait_for_load_state("load")
        assert page.locator("[data-webhook]").count() == 1
        assert page.evaluate("document.documentElement.lang") == language
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{width}px: {overflow}px too wide"
        found += [_readable(f"{prefix} at {width}px", v) for v in _violations(page, axe_source)]
        assert problems.errors == []
        context.close()
    assert found == [], "\n".join(found)
    assert set(PageSubscriber.objects.values_list("kind", "email")) == {
        ("email", CONTACT),
        ("webhook", CONTACT),
    }
