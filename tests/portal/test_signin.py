"""Magic-link sign-in: one-time, expiring, rate limited, saying nothing about who may
sign in; logout; access removed ends the session."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from outbox.models import OutboundMessage
from portal import services
from portal.models import PortalAccess, SignInLink
from tests.portal.conftest import NORTHWIND, TAILSPIN, TODAY, last_link, sign_in

pytestmark = pytest.mark.django_db


def test_a_contact_signs_in_with_the_emailed_link_once(client: Client, demo: None) -> None:
    assert client.get("/portal/").status_code == 302
    response = client.post("/portal/login/", {"email": "OPS@Tailspin.example", "next": "/portal/"})
    assert response.status_code == 200
    assert "Check your email" in response.content.decode()
    path = last_link(TAILSPIN)

    # Opening the link (a mail scanner does) signs nobody in and does not use it up.
    page = client.get(path)
    assert page.status_code == 200 and TAILSPIN in page.content.decode()
    assert client.get("/portal/").status_code == 302

    assert client.post(path)["Location"] == "/portal/"
    assert client.session["portal_contact_email"] == TAILSPIN
    assert (
        client.session["portal_customer_id"]
        == PortalAccess.objects.get(domain="tailspin.example").customer_id
    )
    assert "Tailspin Toys" in client.get("/portal/").content.decode()

    # Single use, even from another browser.
    other = Client()
    assert other.post(path).status_code == 400
    assert other.get(path).status_code == 400
    assert other.get("/portal/").status_code == 302


def test_the_link_expires(client: Client, demo: None, settings: object) -> None:
    client.post("/portal/login/", {"email": TAILSPIN})
    path = last_link(TAILSPIN)
    later = timezone.now() + timedelta(minutes=16)
    with freeze_time(later):
        assert client.post(path).status_code == 400
    assert client.get("/portal/").status_code == 302
    assert SignInLink.objects.get().used_at is None


def test_an_altered_link_does_not_work(client: Client, demo: None) -> None:
    client.post("/portal/login/", {"email": TAILSPIN})
    path = last_link(TAILSPIN)
    assert client.post(path.replace("/signin/", "/signin/x")).status_code == 400
    assert client.post("/portal/signin/not-a-token/").status_code == 400


def test_an_unknown_address_gets_the_same_answer_and_no_email(client: Client, demo: None) -> None:
    known = client.post("/portal/login/", {"email": TAILSPIN}).content.decode()
    unknown = client.post("/portal/login/", {"email": "ops@unknown.example"}).content.decode()
    assert known.replace(TAILSPIN, "X") == unknown.replace("ops@unknown.example", "X")
    assert not OutboundMessage.objects.filter(to=["ops@unknown.example"]).exists()


def test_requests_are_rate_limited_per_address(client: Client, demo: None, settings: object) -> None:
    for _ in range(3):
        assert client.post("/portal/login/", {"email": TAILSPIN}).status_code == 200
    refused = client.post("/portal/login/", {"email": TAILSPIN})
    assert refused.status_code == 429
    assert OutboundMessage.objects.filter(purpose="portal.signin").count() == 3
    # The same refusal for an address that may not sign in: the limit tells nothing.
    for _ in range(3):
        client.post("/portal/login/", {"email": "x@unknown.example"})
    assert client.post("/portal/login/", {"email": "x@unknown.example"}).status_code == 429


def test_logout_and_removed_access_end_the_session(client: Client, demo: None) -> None:
    sign_in(client, NORTHWIND)
    assert client.get("/portal/").status_code == 200
    client.post("/portal/logout/")
    assert client.get("/portal/").status_code == 302

    sign_in(client, NORTHWIND)
    PortalAccess.objects.filter(domain="northwind.example").delete()
    assert client.get("/portal/").status_code == 302


def test_next_goes_back_to_a_page_of_this_site_only(client: Client, demo: None) -> None:
    client.post("/portal/login/", {"email": TAILSPIN, "next": "https://evil.example/"})
    assert client.post(last_link(TAILSPIN))["Location"] == "/portal/"
    client.post("/portal/logout/")
    client.post("/portal/login/", {"email": TAILSPIN, "next": "/portal/statements/2026-10/"})
    assert client.post(last_link(TAILSPIN))["Location"] == "/portal/statements/2026-10/"


def test_a_link_sent_before_access_was_removed_no_longer_works(client: Client, demo: None) -> None:
    client.post("/portal/login/", {"email": TAILSPIN})
    path = last_link(TAILSPIN)
    PortalAccess.objects.filter(domain="tailspin.example").delete()
    assert client.post(path).status_code == 400


def test_a_named_contact_signs_in_without_a_domain_rule(client: Client, demo: None) -> None:
    customer = PortalAccess.objects.get(domain="northwind.example").customer
    services.access_add(actor=None, customer=customer, email="cfo@gmail.example")
    with freeze_time(TODAY):
        sign_in(client, "cfo@gmail.example")
        assert client.get("/portal/").status_code == 200
    assert services.signin_link_request(email="other@gmail.example") is False


def test_old_links_are_cleared_when_new_ones_are_sent(client: Client, demo: None) -> None:
    services.signin_link_request(email=TAILSPIN, now=timezone.now() - timedelta(days=2))
    assert SignInLink.objects.count() == 1
    services.signin_link_request(email=TAILSPIN)
    assert SignInLink.objects.count() == 1
    assert SignInLink.objects.get().expires_at > timezone.now()
