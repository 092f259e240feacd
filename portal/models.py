"""Who may sign in to the customer portal for which customer, and the one-time sign-in
links sent to them. Design: docs/adr/0029-customer-portal.md."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy as _

from credits.models import Customer
from outbox import signing
from subscriptions.models import new_subscriber_token, new_webhook_secret


class PortalAccess(models.Model):
    """One way in for a customer's contacts: every address of an email domain
    (`domain`), or one named address (`email`). Exactly one of the two is set."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="portal_access")
    domain = models.CharField(max_length=253, blank=True, help_text="e.g. tailspin.example")
    email = models.EmailField(blank=True, help_text="One named contact.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["customer", "domain", "email"]
        verbose_name = "portal access"
        verbose_name_plural = "portal access"
        constraints = [
            models.CheckConstraint(
                condition=(Q(domain="") & ~Q(email="")) | (~Q(domain="") & Q(email="")),
                name="portalaccess_domain_xor_email",
            ),
            # One customer per domain and per address: an address signs in to one portal.
            models.UniqueConstraint(
                fields=["domain"], condition=~Q(domain=""), name="portalaccess_domain_once"
            ),
            models.UniqueConstraint(fields=["email"], condition=~Q(email=""), name="portalaccess_email_once"),
        ]

    def __str__(self) -> str:
        return f"{self.email or '@' + self.domain} for {self.customer}"


class SignInLink(models.Model):
    """A magic link sent by email: valid until `expires_at`, once. The token itself is
    never stored; the row keeps a hash of its one-time part."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="+")
    email = models.EmailField()
    nonce_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["expires_at"], name="signinlink_expires")]

    def __str__(self) -> str:
        return f"{self.email} {self.created_at:%Y-%m-%d %H:%M}"


class OidcProvider(models.Model):
    """A customer's own OpenID Connect provider: its contacts whose address is @`domain`
    sign in there instead of by email link. Endpoints come from the issuer's discovery
    document when it is added."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="oidc_providers")
    domain = models.CharField(max_length=253, unique=True, help_text="e.g. tailspin.example")
    issuer = models.URLField(max_length=500)
    authorization_endpoint = models.URLField(max_length=500)
    token_endpoint = models.URLField(max_length=500)
    userinfo_endpoint = models.URLField(max_length=500)
    jwks_uri = models.URLField(max_length=500)
    client_id = models.CharField(max_length=255)
    client_secret = models.CharField(max_length=500)
    sign_algo = models.CharField(max_length=10, default="RS256")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["customer", "domain"]
        verbose_name = "OpenID Connect provider"

    def __str__(self) -> str:
        return f"{self.issuer} for @{self.domain}"


class PageSubscriberKind(models.TextChoices):
    EMAIL = "email", _("Email")
    WEBHOOK = "webhook", _("Webhook")


class PageSubscriber(models.Model):
    """A subscription to one audience or internal page: the signed-in reader's own
    address, or a webhook URL it owns. It hears about the incidents and maintenance
    touching that page's products and locations, in that page's words. Design:
    docs/adr/0034-page-subscribers.md."""

    Kind = PageSubscriberKind

    page = models.ForeignKey("audiences.Page", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(
        max_length=8, choices=PageSubscriberKind.choices, default=PageSubscriberKind.EMAIL
    )
    email = models.EmailField(max_length=254, help_text="The contact's address; for a webhook, its owner's.")
    url = models.URLField(max_length=500, blank=True)
    # Who signed in to subscribe: a customer's contact (audience pages) or a staff user
    # (internal pages). Checked again before every delivery.
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    language = models.CharField(max_length=8, choices=settings.LANGUAGES, default="en")
    time_zone = models.CharField(max_length=64, blank=True, default="")
    token = models.CharField(max_length=32, unique=True, default=new_subscriber_token, editable=False)
    secret = models.CharField(max_length=64, default=new_webhook_secret)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["page", "kind", "email", "url"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="email", url="") | (Q(kind="webhook") & ~Q(url="")),
                name="pagesubscriber_url_matches_kind",
            ),
            models.UniqueConstraint(
                "page", Lower("email"), condition=Q(kind="email"), name="pagesubscriber_email_once"
            ),
            models.UniqueConstraint(
                "page", Lower("email"), "url", condition=Q(kind="webhook"), name="pagesubscriber_webhook_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url or self.email} on {self.page_id}"

    @property
    def is_hook(self) -> bool:
        return self.kind == PageSubscriberKind.WEBHOOK

    @property
    def zone(self) -> str:
        return self.time_zone or settings.DISPLAY_TIME_ZONE

    @property
    def outbox_ref(self) -> str:
        """The `ref` of its outbox rows (cancelled when it unsubscribes)."""
        return f"page-subscriber:{self.pk}"

    @property
    def standard_secret(self) -> str:
        return signing.standard_secret(self.secret)


class PageEvent(models.Model):
    """One incident event for the subscribers of the pages it touches, written in the
    staff member's transaction and expanded after the commit in chunks of subscribers
    (`cursor`: the last id done), as subscriptions.NotificationEvent is for the public
    subscribers. Each (event, subscriber) outbox row has its own key: queued once."""

    key = models.CharField(max_length=200, unique=True)
    event = models.CharField(max_length=40)
    incident = models.ForeignKey("incidents.Incident", on_delete=models.CASCADE, related_name="+")
    update = models.ForeignKey(
        "incidents.IncidentUpdate", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    report = models.ForeignKey(
        "incidents.IncidentReport", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    page_ids = models.JSONField(default=list, blank=True, help_text="The pages the incident touched then.")
    extra = models.JSONField(default=dict, blank=True)
    cursor = models.BigIntegerField(default=0)
    recipients = models.PositiveIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["done_at", "updated_at"], name="pageevent_open")]

    def __str__(self) -> str:
        return f"{self.event} {self.key}"
