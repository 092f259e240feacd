"""Who may sign in to the customer portal for which customer, and the one-time sign-in
links sent to them. Design: docs/adr/0029-customer-portal.md."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from credits.models import Customer


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
