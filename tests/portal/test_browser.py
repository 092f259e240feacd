"""Signing in in real Chromium: through a real OpenID Connect provider on loopback
(panva's oidc-provider, tests/oidc/), and by the magic link read from the email file
the embedded mode writes (var/mail/)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.management import call_command

from credits.models import Customer
from portal import services
from portal.models import OidcProvider
from tests.conftest import service_missing
from tests.public.conftest import browser

__all__ = ["browser"]

pytestmark = [pytest.mark.browser, pytest.mark.services]

OIDC_DIR = Path(__file__).resolve().parents[1] / "oidc"
SECRET = "portal-test-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def demo(transactional_db: None) -> None:
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115


@pytest.fixture
def oidc_issuer(live_server: Any) -> Iterator[str]:
    node = shutil.which("node")
    if node is None:
        service_missing("Node.js is not installed (apt-get install nodejs npm)")
    if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        service_missing("oidc-provider is not installed (npm ci --prefix tests/oidc)")
    port = _free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "REDIRECT_URI": f"{live_server.url}/portal/oidc/callback/",
        "CLIENT_SECRET": SECRET,
    }
    process = subprocess.Popen(
        [str(node), "provider.mjs"], cwd=OIDC_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    issuer = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(f"{issuer}/.well-known/openid-configuration", timeout=1).ok:
                    break
            except requests.RequestException:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.stdout.read().decode() if process.stdout else ""
                pytest.fail(f"oidc-provider did not start: {output}")
            time.sleep(0.2)
        yield issuer
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_contact_signs_in_through_its_company_s_openid_connect_provider(
    browser: Any, live_server: Any, demo: None, oidc_issuer: str
) -> None:
    customer = Customer.objects.get(name="Tailspin Toys")
    # A domain of its own: the provider is the only way in for it.
    services.oidc_provider_add(
        actor=None,
        customer=customer,
        domain="sso.tailspin.example",
        issuer=oidc_issuer,
        client_id="statuspage-portal",
        client_secret=SECRET,
    )
    assert OidcProvider.objects.get().token_endpoint == f"{oidc_issuer}/token"
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/portal/login/?next=/portal/")
        page.fill("input[name=email]", "ana@sso.tailspin.example")
        page.click("main button[type=submit]")
        page.click("[data-oidc-start]")
        # The provider's own login screen, then its consent screen.
        page.wait_for_url(re.compile(rf"^{re.escape(oidc_issuer)}/interaction/"))
        page.fill("input[name=login]", "ana@sso.tailspin.example")
        page.fill("input[name=password]", "anything")
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(rf"^{re.escape(oidc_issuer)}/interaction/"))
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/portal/")
        assert page.locator("h1").inner_text() == "Tailspin Toys: your services"
        assert "ana@sso.tailspin.example" in page.content()
        assert "Cloud Storage" in page.content()

        page.click("text=Sign out")
        page.goto(f"{live_server.url}/portal/")
        assert page.url.startswith(f"{live_server.url}/portal/login/")
    finally:
        context.close()


def test_an_email_the_provider_vouches_for_outside_its_domain_does_not_sign_in(
    browser: Any, live_server: Any, demo: None, oidc_issuer: str
) -> None:
    customer = Customer.objects.get(name="Northwind Traders")
    services.oidc_provider_add(
        actor=None,
        customer=customer,
        domain="sso.northwind.example",
        issuer=oidc_issuer,
        client_id="statuspage-portal",
        client_secret=SECRET,
    )
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/portal/login/")
        page.fill("input[name=email]", "eve@sso.northwind.example")
        page.click("main button[type=submit]")
        page.click("[data-oidc-start]")
        page.wait_for_url(re.compile(rf"^{re.escape(oidc_issuer)}/interaction/"))
        # The provider says the person is someone of another customer's domain.
        page.fill("input[name=login]", "eve@tailspin.example")
        page.fill("input[name=password]", "anything")
        page.click("button[type=submit]")
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r".*/portal/login/\?failed=oidc$"))
        assert "did not complete" in page.content()
        page.goto(f"{live_server.url}/portal/")
        assert "/portal/login/" in page.url
    finally:
        context.close()


def test_a_contact_signs_in_with_the_link_from_the_email_file(
    browser: Any, live_server: Any, demo: None, settings: Any, tmp_path: Path
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    settings.SITE_URL = live_server.url
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/portal/login/?next=/portal/")
        page.fill("input[name=email]", "ops@tailspin.example")
        page.click("main button[type=submit]")
        assert "Check your email" in page.content()
        link = _link_from_mail(tmp_path / "mail")
        page.goto(link)
        page.click("main button[type=submit]")
        page.wait_for_url(f"{live_server.url}/portal/")
        item = page.locator("[data-affected]").first.inner_text()
        assert item == "18 h 11 min"
        # The same link again: used.
        page.goto(link)
        assert "does not work" in page.content()
    finally:
        context.close()


def _link_from_mail(folder: Path) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for path in sorted(folder.glob("*.log")) if folder.is_dir() else []:
            text = path.read_text().replace("=\n", "")
            found = re.search(r"(http://\S+/portal/signin/\S+/)", text)
            if "ops@tailspin.example" in text and found:
                return found.group(1)
        time.sleep(0.2)
    raise AssertionError(f"no sign-in email in {folder}")
