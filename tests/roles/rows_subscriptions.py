"""Role-matrix rows for staff writes on subscribers (the API and the admin).

Public self-service (subscribe, confirm, manage, unsubscribe by signed link) is anonymous
and has no rows: its actor is None by design.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from subscriptions.models import Subscriber
from tests.roles.matrix import Row

CHANGELIST = "/admin/subscriptions/subscriber/"


def _email_subscriber() -> None:
    Subscriber.objects.create(kind=Subscriber.Kind.EMAIL, email="erin@example.com")


def _webhook_subscriber() -> None:
    Subscriber.objects.create(
        kind=Subscriber.Kind.WEBHOOK, email="ops@example.com", url="https://93.184.216.34/hook"
    )


def _api_set_language(client: Client, user: User) -> int:
    subscriber = Subscriber.objects.get()
    response = client.patch(
        f"/api/v1/subscribers/{subscriber.pk}/", {"language": "fr"}, content_type="application/json"
    )
    return response.status_code


def _admin_action(action: str) -> object:
    def perform(client: Client, user: User) -> int:
        subscriber = Subscriber.objects.get()
        response = client.post(CHANGELIST, {"action": action, "_selected_action": [subscriber.pk]})
        return response.status_code

    return perform


def _admin_delete(client: Client, user: User) -> int:
    subscriber = Subscriber.objects.get()
    return client.post(f"{CHANGELIST}{subscriber.pk}/delete/", {"post": "yes"}).status_code


def _admin_change_webhook(client: Client, user: User) -> int:
    subscriber = Subscriber.objects.get()
    response = client.post(
        f"{CHANGELIST}{subscriber.pk}/change/",
        {
            "kind": "webhook",
            "payload_format": "native",
            "email": "ops@example.com",
            "url": "https://93.184.216.34/other",
            "all_products": "on",
            "language": "en",
            "disabled_reason": "",
        },
    )
    return response.status_code


ROWS: list[Row] = [
    Row(
        "subscriber.manage",
        "api",
        "PATCH /api/v1/subscribers/<id>/ (email language)",
        _api_set_language,
        ok=(200,),
        setup=_email_subscriber,
    ),
    Row(
        "subscriber.manage",
        "admin",
        "POST /admin/subscriptions/subscriber/<id>/delete/",
        _admin_delete,
        ok=(302,),
        setup=_email_subscriber,
    ),
    Row(
        "webhook.manage",
        "admin",
        "POST /admin/subscriptions/subscriber/<id>/change/ (webhook URL)",
        _admin_change_webhook,
        ok=(302,),
        setup=_webhook_subscriber,
    ),
    Row(
        "webhook.manage",
        "admin",
        "POST /admin/subscriptions/subscriber/ action=send_test_event",
        _admin_action("send_test_event"),  # type: ignore[arg-type]
        ok=(302,),
        setup=_webhook_subscriber,
    ),
    Row(
        "webhook.manage",
        "admin",
        "POST /admin/subscriptions/subscriber/ action=reenable_webhooks",
        _admin_action("reenable_webhooks"),  # type: ignore[arg-type]
        ok=(302,),
        setup=_webhook_subscriber,
    ),
]
