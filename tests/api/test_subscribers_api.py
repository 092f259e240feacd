"""The staff-only subscribers resource: auth matrix, shape, filters, no secrets in reads,
and the staff writes (create with or without confirmation, delete, unsubscribe, a
webhook's test event and secret rotation) with the admin's roles."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client
from django.utils import timezone

from incidents.models import Product
from outbox import signing
from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from tests.api.keys import key_for
from tests.builders import make_product

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscribers/"


@pytest.fixture
def subscribers() -> dict[str, Subscriber]:
    gmail = make_product("Gmail")
    make_product("Cloud Storage")
    confirmed = Subscriber.objects.create(
        email="ops@example.com", all_products=False, confirmed_at=timezone.now()
    )
    confirmed.products.set([gmail])
    pending = Subscriber.objects.create(email="new@example.com")
    hook = Subscriber.objects.create(
        kind="webhook",
        email="owner@example.com",
        url="https://hooks.example.com/status",
        confirmed_at=timezone.now(),
    )
    return {"confirmed": confirmed, "pending": pending, "hook": hook}


def test_it_refuses_anonymous_callers(anon: Client, subscribers: dict[str, Subscriber]) -> None:
    response = anon.get(URL)
    assert response.status_code == 401
    assert "ops@example.com" not in response.content.decode()
    assert anon.get(f"{URL}{subscribers['confirmed'].pk}/").status_code == 401


def test_it_refuses_non_staff_tokens(user_api: Client, subscribers: dict[str, Subscriber]) -> None:
    response = user_api.get(URL)
    assert response.status_code == 403
    assert "ops@example.com" not in response.content.decode()


def test_it_lists_subscribers_for_staff_without_tokens_or_secrets(
    staff_api: Client, subscribers: dict[str, Subscriber]
) -> None:
    response = staff_api.get(URL)
    assert response.status_code == 200
    results = response.json()["results"]
    assert {r["email"] for r in results} == {"ops@example.com", "new@example.com", "owner@example.com"}
    body = response.content.decode()
    for subscriber in subscribers.values():
        assert subscriber.token not in body
        assert subscriber.secret not in body
    ops = next(r for r in results if r["email"] == "ops@example.com")
    assert ops["products"] == ["gmail"]
    assert ops["confirmed"] is True


def test_it_filters_by_kind_confirmation_and_product(
    staff_api: Client, subscribers: dict[str, Subscriber]
) -> None:
    def emails(query: str) -> set[str]:
        response = staff_api.get(URL + query)
        assert response.status_code == 200
        return {r["email"] for r in response.json()["results"]}

    assert emails("?kind=webhook") == {"owner@example.com"}
    assert emails("?confirmed=false") == {"new@example.com"}
    # All-products subscribers hear about Cloud Storage; the Gmail-only one does not.
    assert emails("?product=cloud-storage") == {"new@example.com", "owner@example.com"}
    assert Product.objects.filter(slug="cloud-storage").exists()


def test_it_answers_bad_filters_with_400(staff_api: Client, subscribers: dict[str, Subscriber]) -> None:
    response = staff_api.get(URL + "?kind=pigeon")
    assert response.status_code == 400
    assert response.json()["errors"]["kind"]


def _staff_key(role: str) -> Client:
    user = User.objects.create_user(f"staff-{role}", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return Client(HTTP_AUTHORIZATION=f"Token {key_for(user)}")


def _post(client: Client, path: str, data: dict[str, Any] | None = None) -> Any:
    return client.post(path, data=data or {}, content_type="application/json")


def test_it_creates_a_subscriber_with_a_confirmation_email(
    staff_api: Client, subscribers: dict[str, Subscriber], django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(
            staff_api,
            URL,
            {
                "email": "New.Person@Example.com",
                "all_products": False,
                "products": ["gmail"],
                "language": "fr",
            },
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert response["Location"] == f"{URL}{body['id']}/"
    assert body["email"] == "New.Person@example.com" and body["confirmed"] is False
    assert body["products"] == ["gmail"] and body["language"] == "fr" and body["secret"] is None
    # The subscribe form's own email: nothing else is sent before its link is used.
    [message] = mail.outbox
    assert message.to == ["New.Person@example.com"]
    assert "/subscriptions/confirm/" in message.body or "confirm" in message.body.lower()


def test_it_imports_a_confirmed_webhook_without_email_and_shows_its_secret_once(
    staff_api: Client, subscribers: dict[str, Subscriber], settings, django_capture_on_commit_callbacks
) -> None:
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE = True
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(
            staff_api,
            URL,
            {
                "kind": "webhook",
                "email": "ops@example.com",
                "url": "https://hooks.example.net/in",
                "payload_format": "statuspage",
                "confirmed": True,
            },
        )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["confirmed"] is True and body["payload_format"] == "statuspage"
    hook = Subscriber.objects.get(pk=body["id"])
    assert body["secret"] == hook.secret and hook.secret.startswith("whsec_")
    assert mail.outbox == []
    # Shown once: reads never carry it.
    assert hook.secret not in staff_api.get(f"{URL}{hook.pk}/").content.decode()


@pytest.mark.parametrize(
    "data, field",
    [
        ({"email": "not an address"}, "email"),
        ({"email": "x@example.com", "all_products": False, "products": ["nope"]}, "products"),
        ({"email": "x@example.com", "kind": "webhook", "url": "ftp://example.com/"}, "url"),
        ({"email": "x@example.com", "payload_format": "statuspage"}, "payload_format"),
        ({"email": "x@example.com", "confirmed": "yes please"}, "confirmed"),
        ({"email": "x@example.com", "token": "abc"}, "token"),
    ],
)
def test_it_refuses_bad_creates_naming_the_field(
    staff_api: Client, subscribers: dict[str, Subscriber], data: dict[str, Any], field: str
) -> None:
    response = _post(staff_api, URL, data)
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert Subscriber.objects.count() == 3
    assert mail.outbox == []


def test_writes_need_the_roles_the_admin_needs(subscribers: dict[str, Subscriber], user_api: Client) -> None:
    responder = _staff_key("Responder")  # staff, but no subscriber.manage / webhook.manage
    assert _post(responder, URL, {"email": "x@example.com"}).status_code == 403
    assert responder.delete(f"{URL}{subscribers['pending'].pk}/").status_code == 403
    assert _post(responder, f"{URL}{subscribers['hook'].pk}/rotate-secret/").status_code == 403
    assert _post(user_api, URL, {"email": "x@example.com"}).status_code == 403
    integrations = _staff_key("Integrations")
    assert _post(integrations, f"{URL}{subscribers['hook'].pk}/rotate-secret/").status_code == 200
    assert Subscriber.objects.count() == 3


def test_it_deletes_and_unsubscribes(staff_api: Client, subscribers: dict[str, Subscriber]) -> None:
    pending = subscribers["pending"]
    etag = staff_api.get(f"{URL}{pending.pk}/")["ETag"]
    assert staff_api.delete(f"{URL}{pending.pk}/", HTTP_IF_MATCH='"stale"').status_code == 412
    assert staff_api.delete(f"{URL}{pending.pk}/", HTTP_IF_MATCH=etag).status_code == 204
    assert not Subscriber.objects.filter(pk=pending.pk).exists()
    assert staff_api.delete(f"{URL}{pending.pk}/").status_code == 404

    confirmed = subscribers["confirmed"]
    response = _post(staff_api, f"{URL}{confirmed.pk}/unsubscribe/")
    assert response.status_code == 200 and response.json() == {"cancelled": 0}
    assert not Subscriber.objects.filter(pk=confirmed.pk).exists()


def test_it_sends_a_test_event_and_rotates_a_webhooks_secret(
    staff_api: Client, subscribers: dict[str, Subscriber]
) -> None:
    hook = subscribers["hook"]
    response = _post(staff_api, f"{URL}{hook.pk}/test-event/")
    assert response.status_code == 202, response.content
    row = OutboundMessage.objects.get(ref=hook.outbox_ref)
    assert row.payload is not None and row.payload["meta"]["event"] == "test"
    assert row.headers == {"X-Status-Event": "test"}
    assert response.json() == {"event": "test", "webhook_id": signing.webhook_id(row.idempotency_key)}

    old = hook.secret
    response = _post(staff_api, f"{URL}{hook.pk}/rotate-secret/")
    assert response.status_code == 200
    hook.refresh_from_db()
    assert hook.secret != old and response.json()["secret"] == hook.secret
    assert hook.secret.startswith("whsec_")
    row.refresh_from_db()
    assert row.secret == hook.secret  # still queued: signed with the new secret

    email = subscribers["confirmed"]
    for action in ("test-event", "rotate-secret"):
        refused = _post(staff_api, f"{URL}{email.pk}/{action}/")
        assert refused.status_code == 409, refused.content
        assert "generic webhook" in refused.json()["detail"]


def test_a_subscriber_known_already_is_a_conflict(
    staff_api: Client, subscribers: dict[str, Subscriber]
) -> None:
    response = _post(staff_api, URL, {"email": "OPS@example.com", "confirmed": True})
    assert response.status_code == 409 and "subscribed already" in response.json()["detail"]
    assert Subscriber.objects.count() == 3 and mail.outbox == []
