"""Webhook targets: validation (no SSRF) and the failure counter.

Deliveries are outbox rows (signed, retried with backoff, every attempt logged there).
This module decides whether a URL may be a target at all, and listens to the outbox's
final outcome per message: a success resets the subscriber's count of consecutive
failures, a message that failed for good adds one, and at the threshold the webhook is
disabled and its owner told by email.
"""

from __future__ import annotations

import logging
import socket
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils import timezone
from django.utils.translation import gettext as _

from outbox.webhook_connect import is_public_address
from subscriptions.models import Subscriber

logger = logging.getLogger(__name__)

WEBHOOK_PURPOSE = "subscriptions.webhook"
GONE = 410


# The documented incoming-webhook hosts. Slack: https://api.slack.com/messaging/webhooks
# (https://hooks.slack.com/services/...). Teams: Office 365 connectors post to
# <tenant>.webhook.office.com; Workflows (Power Automate, which replaces connectors) give
# URLs on <region>.logic.azure.com or <env>.environment.api.powerplatform.com. A host is
# the name itself or a subdomain of a "." entry.
SLACK_HOSTS = ("hooks.slack.com",)
TEAMS_HOSTS = (".webhook.office.com", ".logic.azure.com", ".environment.api.powerplatform.com")


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    return any(host.endswith(entry) if entry.startswith(".") else host == entry for entry in allowed)


def validate_webhook_url(url: str, *, kind: str = "webhook") -> str:
    """Return the URL if it may receive webhooks of `kind`, else raise ValidationError.

    https only (settings.WEBHOOK_ALLOW_HTTP lifts that for development), no credentials,
    Slack and Teams URLs on their documented webhook hosts only, and every address the
    host resolves to must be a public one: a subscriber must not make us POST to our own
    loopback, the cloud metadata service or the private network
    (settings.WEBHOOK_ALLOW_PRIVATE lifts that for tests and local development).
    """
    url = (url or "").strip()
    parts = _check_shape(url)
    _check_host_for_kind(parts, kind)
    if not settings.WEBHOOK_ALLOW_PRIVATE:
        _check_public(parts)
    return url


def _check_host_for_kind(parts: SplitResult, kind: str) -> None:
    host = parts.hostname or ""
    if kind == Subscriber.Kind.SLACK and not host_allowed(host, SLACK_HOSTS):
        raise _invalid(_("A Slack incoming-webhook URL starts with https://hooks.slack.com/."))
    if kind == Subscriber.Kind.TEAMS and not host_allowed(host, TEAMS_HOSTS):
        raise _invalid(
            _(
                "A Teams webhook URL is on webhook.office.com (connectors) or on logic.azure.com or "
                "environment.api.powerplatform.com (Workflows)."
            )
        )


def _invalid(message: str) -> ValidationError:
    return ValidationError({"url": message})


def _check_shape(url: str) -> SplitResult:
    """Syntax, scheme, no credentials, a host and a valid port."""
    if any(ord(ch) < 32 or ch == "\x7f" for ch in url):
        raise _invalid(_("Control characters are not allowed in a URL."))
    schemes = ["http", "https"] if settings.WEBHOOK_ALLOW_HTTP else ["https"]
    try:
        URLValidator(schemes=schemes)(url)
    except ValidationError:
        if settings.WEBHOOK_ALLOW_HTTP:
            raise _invalid(_("Enter a valid http or https URL.")) from None
        raise _invalid(_("Enter a valid https URL (webhooks are sent over https only).")) from None
    parts = urlsplit(url)
    if parts.username or parts.password:
        raise _invalid(_("Do not put credentials in the webhook URL."))
    if not parts.hostname:
        raise _invalid(_("The URL needs a host."))
    port = _port(parts)
    if port is not None and not 1 <= port <= 65535:
        raise _invalid(_("The port must be a number from 1 to 65535."))
    return parts


def _port(parts: SplitResult) -> int | None:
    try:
        return parts.port  # urllib raises ValueError past 65535 (this was a 500)
    except ValueError:
        return -1


def _check_public(parts: SplitResult) -> None:
    """Every address the host resolves to must be a public one."""
    port = _port(parts) or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname or "", port)
    except (socket.gaierror, UnicodeError):
        raise _invalid(_("The webhook host does not resolve.")) from None
    addresses = {str(info[4][0]) for info in infos}
    if not addresses or not all(is_public_address(a) for a in addresses):
        raise _invalid(_("Webhook targets must be public internet addresses."))


def _subscriber_for(message: Any) -> Subscriber | None:
    ref = getattr(message, "ref", "") or ""
    if not ref.startswith("subscriber:"):
        return None
    try:
        pk = int(ref.split(":", 1)[1])
    except ValueError:
        return None
    # Row lock: two workers finishing deliveries for one webhook at once must not lose
    # an increment.
    return Subscriber.objects.select_for_update().filter(pk=pk).first()


def webhook_delivered(message: Any) -> None:
    """Outbox on_sent handler (runs inside the transaction that marks the row sent)."""
    subscriber = _subscriber_for(message)
    if subscriber is not None and subscriber.failure_count:
        subscriber.failure_count = 0
        subscriber.save(update_fields=["failure_count", "updated_at"])


def _answered_gone(message: Any) -> bool:
    """The receiver's last answer was 410 Gone: it asks to be sent nothing more."""
    from outbox.models import DeliveryAttempt

    last = DeliveryAttempt.objects.filter(message_id=message.pk).order_by("-number", "-id").first()
    return last is not None and last.status_code == GONE


def webhook_failed(message: Any) -> None:
    """Outbox on_failed handler: a 410 Gone unsubscribes the hook (Standard Webhooks);
    other failures count, and disable it at the threshold (same transaction)."""
    from subscriptions import emails, services  # they import the outbox; keep app loading light

    subscriber = _subscriber_for(message)
    if subscriber is None:
        return
    if _answered_gone(message):
        logger.warning("webhook subscriber %s answered 410 Gone: unsubscribed", subscriber.pk)
        services.subscriber_unsubscribe(subscriber=subscriber)
        return
    if subscriber.disabled_at is not None:
        return
    subscriber.failure_count += 1
    fields = ["failure_count", "updated_at"]
    if subscriber.failure_count >= settings.WEBHOOK_MAX_CONSECUTIVE_FAILURES:
        subscriber.disabled_at = timezone.now()
        subscriber.disabled_reason = (
            f"{subscriber.failure_count} deliveries in a row failed; last error: "
            f"{(getattr(message, 'last_error', '') or '')[:120]}"
        )
        fields += ["disabled_at", "disabled_reason"]
        logger.warning(
            "webhook subscriber %s disabled after %s failures", subscriber.pk, subscriber.failure_count
        )
    subscriber.save(update_fields=fields)
    if subscriber.disabled_at is not None:
        emails.send_webhook_disabled(subscriber=subscriber)


def register_outbox_handlers() -> None:
    from outbox.services import outbox_register_handler

    outbox_register_handler(WEBHOOK_PURPOSE, on_sent=webhook_delivered, on_failed=webhook_failed)
