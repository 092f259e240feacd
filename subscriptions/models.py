"""Subscribers and the record of what was fanned out to them.

A subscriber is an email address or a webhook URL (with its owner's address), interested
in every public product or in a chosen few. Nothing is sent to a subscriber before it
is confirmed (double opt-in), and a disabled webhook gets nothing more until its owner
re-enables it. The deliveries themselves are outbox rows (app `outbox`); this app only
decides who gets what.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy as _

from incidents.models import Product
from outbox import signing


def new_subscriber_token() -> str:
    """The random value signed into every link: the address never appears in a URL."""
    return secrets.token_urlsafe(18)


def new_webhook_secret() -> str:
    """A Standard Webhooks secret (`whsec_...`); older subscribers keep their hex one
    until they rotate it (outbox/signing.py)."""
    return signing.new_secret()


class SubscriberKind(models.TextChoices):
    EMAIL = "email", _("Email")
    WEBHOOK = "webhook", _("Webhook")
    # Chat channels: incoming-webhook URLs that get a formatted message (channels.py).
    SLACK = "slack", _("Slack channel")
    TEAMS = "teams", _("Microsoft Teams channel")


# Every kind but email posts to a URL through the outbox's webhook path.
HOOK_KINDS = (SubscriberKind.WEBHOOK, SubscriberKind.SLACK, SubscriberKind.TEAMS)


class PayloadFormat(models.TextChoices):
    """What a generic webhook receives: our own event document, or Statuspage's
    subscriber payload shape, so receivers written for Statuspage work unchanged."""

    NATIVE = "native", _("This page's event format")
    STATUSPAGE = "statuspage", _("Statuspage-compatible")


class Subscriber(models.Model):
    Kind = SubscriberKind
    Format = PayloadFormat

    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.EMAIL)
    payload_format = models.CharField(
        max_length=12,
        choices=PayloadFormat.choices,
        default=PayloadFormat.NATIVE,
        help_text="Generic webhooks only: the JSON shape delivered.",
    )
    email = models.EmailField(
        max_length=254, help_text="The subscriber's address; for a webhook, its owner's address."
    )
    url = models.URLField(
        max_length=500, blank=True, help_text="Webhook or chat incoming-webhook target (not for email)."
    )
    all_products = models.BooleanField(default=True, help_text="Notify about every public product.")
    language = models.CharField(
        max_length=8,
        choices=settings.LANGUAGES,
        default="en",
        help_text="The language of the emails this subscriber receives.",
    )
    # Empty: the page's display zone (DISPLAY_TIME_ZONE), for subscribers from before
    # the choice existed; the form stores the zone it shows as chosen.
    time_zone = models.CharField(
        max_length=64, blank=True, default="", help_text="The IANA time zone of the times in its emails."
    )
    products = models.ManyToManyField(Product, blank=True, related_name="subscribers")
    token = models.CharField(max_length=32, unique=True, default=new_subscriber_token, editable=False)
    secret = models.CharField(
        max_length=64, blank=True, default=new_webhook_secret, help_text="HMAC key for webhook signatures."
    )
    confirmed_at = models.DateTimeField(null=True, blank=True)
    failure_count = models.PositiveIntegerField(
        default=0, help_text="Consecutive webhook deliveries that failed for good."
    )
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=SubscriberKind.values), name="subscriber_kind_valid"),
            models.CheckConstraint(
                condition=Q(kind="email", url="") | (Q(kind__in=[k.value for k in HOOK_KINDS]) & ~Q(url="")),
                name="subscriber_url_matches_kind",
            ),
            models.CheckConstraint(
                condition=Q(payload_format__in=PayloadFormat.values), name="subscriber_payload_format_valid"
            ),
            models.CheckConstraint(
                condition=Q(language__in=[code for code, _name in settings.LANGUAGES]),
                name="subscriber_language_valid",
            ),
            # One email subscription per address (case-insensitively), one webhook per
            # owner and URL: subscribing twice updates, never duplicates.
            models.UniqueConstraint(
                Lower("email"), condition=Q(kind="email"), name="subscriber_email_unique"
            ),
            models.UniqueConstraint(
                Lower("email"), F("url"), condition=~Q(kind="email"), name="subscriber_webhook_unique"
            ),
        ]
        indexes = [
            # The fan-out query: confirmed and not disabled.
            models.Index(fields=["confirmed_at", "disabled_at"], name="subscriber_active"),
        ]

    def __str__(self) -> str:
        return self.url if self.is_hook else self.email

    @property
    def is_hook(self) -> bool:
        """Delivered as a POST to `url` (a webhook or a chat channel), not by email."""
        return self.kind in HOOK_KINDS

    @property
    def is_confirmed(self) -> bool:
        return self.confirmed_at is not None

    @property
    def is_active(self) -> bool:
        return self.confirmed_at is not None and self.disabled_at is None

    @property
    def zone(self) -> str:
        """The zone its emails write times in."""
        return self.time_zone or settings.DISPLAY_TIME_ZONE

    @property
    def legacy_secret(self) -> bool:
        """Its secret is of the form from before Standard Webhooks (hex): its deliveries
        also carry the deprecated `X-Status-Signature` until it rotates the secret."""
        return signing.is_legacy_secret(self.secret)

    @property
    def standard_secret(self) -> str:
        """The secret as Standard Webhooks libraries take it (`whsec_...`)."""
        return signing.standard_secret(self.secret)

    @property
    def outbox_ref(self) -> str:
        """The `ref` of this subscriber's outbox rows (to cancel them on unsubscribe)."""
        return f"subscriber:{self.pk}"


class Fanout(models.Model):
    """One row per event fanned out that is not tied to a timeline update.

    The maintenance tick runs every minute; this row (unique key, written in the same
    transaction as the outbox rows) is what makes a reminder go out once, without
    re-reading every subscriber on every tick.
    """

    key = models.CharField(max_length=200, unique=True)
    recipients = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key


class NotificationEvent(models.Model):
    """One incident event to fan out, written in the staff member's transaction.

    The staff request records only this row (constant work, whatever the number of
    subscribers); Celery tasks expand it after the commit in chunks of subscribers ordered
    by id, `cursor` being the last id done. Each (event, subscriber) outbox row has its own
    unique key, so a chunk that runs twice (a redelivered task, the resume sweep) queues
    nothing new.
    """

    key = models.CharField(max_length=200, unique=True)
    event = models.CharField(max_length=40)
    incident = models.ForeignKey("incidents.Incident", on_delete=models.CASCADE, related_name="+")
    update = models.ForeignKey(
        "incidents.IncidentUpdate", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    report = models.ForeignKey(
        "incidents.IncidentReport", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    product_ids = models.JSONField(default=list, blank=True, help_text="Affected public products then.")
    payload = models.JSONField(default=dict, blank=True, help_text="The webhook body, fixed at the event.")
    extra = models.JSONField(default=dict, blank=True, help_text="Extra email context.")
    cursor = models.BigIntegerField(default=0, help_text="Subscribers up to this id are queued.")
    recipients = models.PositiveIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["done_at", "updated_at"], name="notification_event_open")]

    def __str__(self) -> str:
        return f"{self.event} {self.key}"


class ComponentLevel(models.Model):
    """The level each public product (a Statuspage "component") was last announced at:
    what a `component_update` webhook names as `old_status` (subscriptions/components.py)."""

    product = models.OneToOneField(Product, on_delete=models.CASCADE, related_name="+")
    level = models.CharField(max_length=24)
    version = models.PositiveIntegerField(default=0, help_text="Changes announced so far.")
    changed_at = models.DateTimeField()

    class Meta:
        ordering = ["product_id"]

    def __str__(self) -> str:
        return f"{self.product_id}: {self.level}"
