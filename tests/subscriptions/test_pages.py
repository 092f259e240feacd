"""The public subscription pages: subscribe, confirm, manage, unsubscribe, rate limits."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from freezegun import freeze_time

from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from subscriptions.tokens import Purpose, make_token
from tests.builders import utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db

SUBSCRIBE = "/subscribe/"


def _post_subscribe(client: Client, capture: Any, **data: Any) -> Any:
    form = {"kind": "email", "email": "erin@example.com", "scope": "all", **data}
    with capture(execute=True):
        return client.post(SUBSCRIBE, form, REMOTE_ADDR=data.pop("ip", "203.0.113.7"))


def _link(body: str, fragment: str) -> str:
    for word in body.split():
        if fragment in word:
            return word.replace("http://testserver", "")
    raise AssertionError(f"no link with {fragment!r} in:\n{body}")


def test_it_renders_the_subscribe_form_with_public_products_only(
    client: Client, gmail, cloud_storage
) -> None:
    from tests.builders import make_product

    make_product("Internal Billing", is_public=False)
    response = client.get(SUBSCRIBE)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Gmail" in body and "Cloud Storage" in body
    assert "Internal Billing" not in body
    assert 'name="csrfmiddlewaretoken"' in body


def test_it_double_opts_in_by_email(
    client: Client, gmail, cloud_storage, django_capture_on_commit_callbacks
) -> None:
    response = _post_subscribe(
        client, django_capture_on_commit_callbacks, scope="some", products=[str(gmail.pk)]
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("subscriptions:subscribe_sent")

    subscriber = Subscriber.objects.get()
    assert subscriber.email == "erin@example.com"
    assert subscriber.confirmed_at is None
    assert not subscriber.all_products and list(subscriber.products.all()) == [gmail]

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["erin@example.com"]
    assert "Confirm" in message.subject
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message.extra_headers["List-Unsubscribe"].startswith("<http://testserver/unsubscribe/")
    assert "erin" not in message.extra_headers["List-Unsubscribe"]
    html = message.alternatives[0][0]  # type: ignore[attr-defined]
    assert "Confirm subscription" in html

    confirm_path = _link(str(message.body), "/subscribe/confirm/")
    # GET shows a button and changes nothing (mail scanners follow links).
    page = client.get(confirm_path)
    assert page.status_code == 200
    assert b"Confirm subscription" in page.content
    subscriber.refresh_from_db()
    assert subscriber.confirmed_at is None

    done = client.post(confirm_path)
    assert done.status_code == 302
    assert "/subscriptions/manage/" in done["Location"]
    subscriber.refresh_from_db()
    assert subscriber.confirmed_at is not None
    manage = client.get(done["Location"])
    assert b"You are subscribed." in manage.content

    # Confirming twice keeps the first time.
    first = subscriber.confirmed_at
    client.post(confirm_path)
    subscriber.refresh_from_db()
    assert subscriber.confirmed_at == first


def test_it_answers_known_and_unknown_addresses_alike(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    make_subscriber("known@example.com", products=[gmail])
    known = _post_subscribe(client, django_capture_on_commit_callbacks, email="known@example.com")
    unknown = _post_subscribe(client, django_capture_on_commit_callbacks, email="unknown@example.com")
    assert known.status_code == unknown.status_code == 302
    assert known["Location"] == unknown["Location"]
    assert client.get(known["Location"]).content == client.get(unknown["Location"]).content

    # The known subscriber's choice did not change; it was told how to change it.
    known_sub = Subscriber.objects.get(email="known@example.com")
    assert not known_sub.all_products and list(known_sub.products.all()) == [gmail]
    by_address = {m.to[0]: m for m in mail.outbox}
    assert set(by_address) == {"known@example.com", "unknown@example.com"}
    assert "/subscriptions/manage/" in by_address["known@example.com"].body
    assert "/subscribe/confirm/" not in by_address["known@example.com"].body
    assert "/subscribe/confirm/" in by_address["unknown@example.com"].body


def test_it_refuses_header_injection_and_bad_input(
    client: Client, django_capture_on_commit_callbacks
) -> None:
    for email in (
        "eve@example.com\r\nBcc: victim@example.org",
        "eve@example.com, victim@example.org",
        "not-an-address",
    ):
        response = _post_subscribe(client, django_capture_on_commit_callbacks, email=email)
        assert response.status_code == 400
    response = _post_subscribe(client, django_capture_on_commit_callbacks, scope="some")
    assert response.status_code == 400
    assert b"Choose at least one product" in response.content
    assert not Subscriber.objects.exists()
    assert not OutboundMessage.objects.exists()
    assert mail.outbox == []


def test_it_refuses_private_webhook_targets(
    client: Client, settings, django_capture_on_commit_callbacks
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = False
    for url in (
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://user:pw@93.184.216.34/hook",
        "ftp://93.184.216.34/hook",
    ):
        response = _post_subscribe(client, django_capture_on_commit_callbacks, kind="webhook", url=url)
        assert response.status_code == 400, url
    assert not Subscriber.objects.exists()
    # A literal public address needs no DNS and is accepted.
    ok = _post_subscribe(
        client, django_capture_on_commit_callbacks, kind="webhook", url="https://93.184.216.34/hook"
    )
    assert ok.status_code == 302
    webhook = Subscriber.objects.get()
    assert webhook.kind == "webhook" and webhook.url == "https://93.184.216.34/hook"
    assert webhook.secret.startswith("whsec_") and len(webhook.secret) == 50  # Standard Webhooks
    assert [m.to for m in mail.outbox] == [["erin@example.com"]]


def test_it_limits_requests_per_address_without_telling(
    client: Client, settings, django_capture_on_commit_callbacks
) -> None:
    settings.SUBSCRIBE_RATE_PER_ADDRESS = 2
    settings.SUBSCRIBE_CONFIRM_RESEND_SECONDS = 1
    with freeze_time(utc(2026, 5, 1, 10, 0, 0)) as clock:
        for i in range(5):
            clock.tick(2)  # a new resend bucket each time: only the cache limit applies
            response = _post_subscribe(client, django_capture_on_commit_callbacks, ip=f"198.51.100.{i}")
            assert response.status_code == 302
    assert len(mail.outbox) == 2
    assert Subscriber.objects.count() == 1


def test_it_bounds_confirmation_emails_when_the_cache_is_down(
    client: Client, django_capture_on_commit_callbacks
) -> None:
    from django.core.cache import caches

    # The counters live in their own cache alias (issue 11). The clock is frozen so that
    # the six requests cannot straddle two resend periods on a slow machine.
    with (
        freeze_time(utc(2026, 5, 1, 10, 1)),
        mock.patch.object(caches["ratelimit"], "incr", side_effect=ConnectionError("redis down")),
    ):
        responses = [_post_subscribe(client, django_capture_on_commit_callbacks) for _ in range(6)]
    # The limiter failed open (nobody was refused) ...
    assert {r.status_code for r in responses} == {302}
    # ... but the database still allowed one confirmation per resend period.
    assert len(mail.outbox) == 1


def test_it_limits_requests_per_client_ip(
    client: Client, settings, django_capture_on_commit_callbacks
) -> None:
    settings.SUBSCRIBE_RATE_PER_IP = 3
    statuses = []
    for i in range(5):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                SUBSCRIBE,
                {"kind": "email", "email": f"person{i}@example.com", "scope": "all"},
                REMOTE_ADDR="203.0.113.50",
                # A forged header must not make each request look like a new client.
                HTTP_X_FORWARDED_FOR=f"192.0.2.{i}",
            )
        statuses.append(response.status_code)
    assert statuses == [302, 302, 302, 429, 429]
    assert int(response["Retry-After"]) > 0
    assert Subscriber.objects.count() == 3
    assert len(mail.outbox) == 3
    # Another client is not affected.
    other = _post_subscribe(client, django_capture_on_commit_callbacks, ip="203.0.113.51")
    assert other.status_code == 302


def test_it_changes_products_from_the_manage_page(client: Client, gmail, cloud_storage) -> None:
    subscriber = make_subscriber(products=[gmail])
    path = reverse("subscriptions:manage", args=[make_token(subscriber, Purpose.MANAGE)])
    page = client.get(path)
    assert page.status_code == 200
    assert b"carol@example.com" in page.content
    response = client.post(path, {"scope": "some", "products": [str(cloud_storage.pk)], "action": "save"})
    assert response.status_code == 302
    assert list(subscriber.products.all()) == [cloud_storage]
    response = client.post(path, {"scope": "all", "action": "save"})
    subscriber.refresh_from_db()
    assert subscriber.all_products
    # An unsubscribe link does not open the manage page.
    wrong = reverse("subscriptions:manage", args=[make_token(subscriber, Purpose.UNSUBSCRIBE)])
    assert client.get(wrong).status_code == 400


def test_it_unsubscribes_only_on_post_and_without_csrf(gmail) -> None:
    subscriber = make_subscriber(products=[gmail])
    pending = OutboundMessage.objects.create(
        channel="email",
        idempotency_key="pending-for-carol",
        to=["carol@example.com"],
        subject="x",
        body_text="x",
        ref=subscriber.outbox_ref,
        next_attempt_at=subscriber.created_at,
    )
    path = reverse("subscriptions:unsubscribe", args=[make_token(subscriber, Purpose.UNSUBSCRIBE)])
    client = Client(enforce_csrf_checks=True)
    page = client.get(path)
    assert page.status_code == 200
    assert b"Unsubscribe" in page.content
    assert Subscriber.objects.filter(pk=subscriber.pk).exists()

    # RFC 8058 one-click: a bare POST from the mail client, no cookie, no CSRF token.
    response = client.post(
        path, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200
    assert b"You are unsubscribed" in response.content
    assert not response.cookies
    assert not Subscriber.objects.filter(pk=subscriber.pk).exists()
    pending.refresh_from_db()
    assert pending.state == "cancelled"

    # Replayed: harmless, same answer.
    again = client.post(path, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded")
    assert again.status_code == 200
    assert b"You are unsubscribed" in again.content
    assert b"already been removed" in client.get(path).content


def test_it_refuses_abused_links(client: Client, settings, gmail) -> None:
    subscriber = make_subscriber(products=[gmail], confirmed=False)
    confirm = make_token(subscriber, Purpose.CONFIRM)
    unsubscribe = make_token(subscriber, Purpose.UNSUBSCRIBE)

    # Tampered: another subscriber's id under this signature.
    other = make_subscriber("mallory@example.com")
    _value, stamp, signature = unsubscribe.split(":")
    forged = f"{other.token}:{stamp}:{signature}"
    response = client.post(reverse("subscriptions:unsubscribe", args=[forged]))
    assert response.status_code == 400
    assert Subscriber.objects.filter(pk=other.pk).exists()

    # Another purpose: a confirm link cannot unsubscribe, an unsubscribe link cannot confirm.
    assert client.post(reverse("subscriptions:unsubscribe", args=[confirm])).status_code == 400
    assert client.post(reverse("subscriptions:confirm", args=[unsubscribe])).status_code == 400
    assert Subscriber.objects.filter(pk=subscriber.pk).exists()
    subscriber.refresh_from_db()
    assert subscriber.confirmed_at is None

    # Expired.
    settings.SUBSCRIPTION_CONFIRM_MAX_AGE = 60
    with freeze_time(utc(2026, 1, 1)):
        old = make_token(subscriber, Purpose.CONFIRM)
    response = client.post(reverse("subscriptions:confirm", args=[old]))
    assert response.status_code == 410
    assert b"expired" in response.content
    subscriber.refresh_from_db()
    assert subscriber.confirmed_at is None

    # Unknown (a genuine token whose subscriber is gone).
    client.post(reverse("subscriptions:unsubscribe", args=[unsubscribe]))
    assert client.post(reverse("subscriptions:confirm", args=[confirm])).status_code == 400
    assert not Subscriber.objects.filter(pk=subscriber.pk).exists()

    # Garbage.
    assert client.get(reverse("subscriptions:manage", args=["nonsense"])).status_code == 400
