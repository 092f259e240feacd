"""Issue 27's review findings on subscriptions: what the subscribe form accepts, what its
emails echo, and how the per-address limit counts a mailbox."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from freezegun import freeze_time

from subscriptions.models import Subscriber
from tests.builders import utc

pytestmark = pytest.mark.django_db

SUBSCRIBE = "/subscribe/"
# What an attacker would like the confirmation email to carry to someone else's inbox.
LURE = "URGENT-call-0800-000-000-to-keep-your-account"


def _subscribe(client: Client, capture: Any, ip: str = "203.0.113.7", **data: Any) -> Any:
    form = {"kind": "email", "email": "erin@example.com", "scope": "all", **data}
    with capture(execute=True):
        return client.post(SUBSCRIBE, form, REMOTE_ADDR=ip)


def _parts(message: Any) -> list[str]:
    html = [content for content, mime in message.alternatives if mime == "text/html"]
    assert html, "the email has an HTML part"
    return [message.subject, message.body, *html]


def test_it_counts_plus_addressed_variants_as_one_mailbox(
    client: Client, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.SUBSCRIBE_RATE_PER_ADDRESS = 2
    settings.SUBSCRIBE_CONFIRM_RESEND_SECONDS = 1
    with freeze_time(utc(2026, 5, 1, 10, 0, 0)) as clock:
        for i, email in enumerate(
            [
                "erin+1@example.com",
                "Erin+2@Example.com",
                "erin+x@example.com",
                "ERIN@example.com",
                "erin+z@example.com",
            ]
        ):
            clock.tick(2)  # a new resend period each time: only the per-address limit applies
            response = _subscribe(
                client, django_capture_on_commit_callbacks, ip=f"198.51.100.{i}", email=email
            )
            assert response.status_code == 302  # the answer never tells
    assert len(mail.outbox) == 2
    # Dots are not stripped (most providers deliver e.rin and erin to different people).
    other = _subscribe(
        client, django_capture_on_commit_callbacks, ip="198.51.100.9", email="e.rin@example.com"
    )
    assert other.status_code == 302
    assert len(mail.outbox) == 3


def test_plus_variants_share_the_database_resend_period_when_the_cache_is_down(
    client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    from unittest import mock

    from django.core.cache import caches

    with mock.patch.object(caches["ratelimit"], "incr", side_effect=ConnectionError("redis down")):
        for i in range(4):
            _subscribe(client, django_capture_on_commit_callbacks, email=f"erin+{i}@example.com")
    assert len(mail.outbox) == 1


def test_the_confirmation_email_carries_nothing_typed_but_the_address(
    client: Client, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    url = f"https://93.184.216.34/{LURE}?{LURE}"
    response = _subscribe(client, django_capture_on_commit_callbacks, kind="webhook", url=url)
    assert response.status_code == 302
    [message] = mail.outbox
    assert message.to == ["erin@example.com"]
    for part in _parts(message):
        assert LURE not in part and "93.184.216.34" not in part
    assert "erin@example.com" in message.body

    # The "already subscribed" email, sent to a confirmed subscriber, neither.
    Subscriber.objects.update(confirmed_at=utc(2026, 5, 1))
    settings.SUBSCRIBE_CONFIRM_RESEND_SECONDS = 1
    with freeze_time(utc(2030, 1, 1)):
        again = _subscribe(
            client, django_capture_on_commit_callbacks, ip="203.0.113.8", kind="webhook", url=url
        )
    assert again.status_code == 302
    known = mail.outbox[-1]
    assert len(mail.outbox) == 2 and "manage" in known.body
    for part in _parts(known):
        assert LURE not in part and "93.184.216.34" not in part


@pytest.mark.parametrize(
    ("kind", "url", "message"),
    [
        ("webhook", "http://93.184.216.34/hook", "https"),
        ("slack", "http://hooks.slack.com/services/T/B/x", "https"),
        ("slack", "https://hooks.slack.com.evil.example/services/T/B/x", "hooks.slack.com"),
        ("slack", "https://93.184.216.34/services/T/B/x", "hooks.slack.com"),
        ("teams", "https://webhook.office.com.evil.example/webhookb2/x", "webhook.office.com"),
        ("teams", "https://hooks.slack.com/services/T/B/x", "webhook.office.com"),
    ],
)
def test_it_refuses_http_and_foreign_hosts_for_hooks(
    client: Client,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    kind: str,
    url: str,
    message: str,
) -> None:
    settings.WEBHOOK_ALLOW_HTTP = False
    response = _subscribe(client, django_capture_on_commit_callbacks, kind=kind, url=url)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["url"] and message in " ".join(errors["url"])
    assert not Subscriber.objects.exists()
    assert mail.outbox == []


@pytest.mark.parametrize(
    ("kind", "url"),
    [
        ("webhook", "https://93.184.216.34/hook"),
        ("slack", "https://hooks.slack.com/services/T0/B0/x"),
        ("teams", "https://contoso.webhook.office.com/webhookb2/x"),
        ("teams", "https://prod-01.westeurope.logic.azure.com:443/workflows/x/triggers/manual/paths/invoke"),
        ("teams", "https://default1a2b.3c.environment.api.powerplatform.com:443/powerautomate/automations/x"),
    ],
)
def test_it_accepts_https_on_the_documented_hosts(
    client: Client, settings: Any, django_capture_on_commit_callbacks: Any, kind: str, url: str
) -> None:
    settings.WEBHOOK_ALLOW_HTTP = False
    settings.WEBHOOK_ALLOW_PRIVATE = True  # no DNS in tests: the host rule is what is tested
    response = _subscribe(client, django_capture_on_commit_callbacks, kind=kind, url=url)
    assert response.status_code == 302
    assert Subscriber.objects.get().url == url


def test_http_is_allowed_when_the_setting_says_so(
    client: Client, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.WEBHOOK_ALLOW_HTTP = True
    response = _subscribe(
        client, django_capture_on_commit_callbacks, kind="webhook", url="http://93.184.216.34/h"
    )
    assert response.status_code == 302


def test_the_admin_holds_hooks_to_the_same_rules(client: Client, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_HTTP = False
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    response = client.post(
        "/admin/subscriptions/subscriber/add/",
        {
            "kind": "slack",
            "email": "ops@example.com",
            "url": "https://evil.example/services/x",
            "all_products": "on",
            "payload_format": "native",
            "language": "en",
        },
    )
    assert response.status_code == 200
    assert "hooks.slack.com" in " ".join(response.context["adminform"].form.errors["url"])
    assert not Subscriber.objects.exists()
