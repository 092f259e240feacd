"""Pages beside the public one: an internal page for staff and pages for named customers.

A page shows its own products and locations and the incidents touching them; its
visibility says who may read it. The public page at `/` is not a row here and never
reads these tables. Design: docs/adr/0028-audience-pages.md.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q

from credits.models import Customer
from incidents.models import IncidentUpdate, Location, Product

# Moved by every write of this room (pages, keys, words): the private page cache keys
# carry it (audiences.cache) and the host map follows it (audiences.selectors).
WORDS_VERSION_KEY = "audiences:version"


class Page(models.Model):
    class Visibility(models.TextChoices):
        PUBLIC = "public", "Public"
        INTERNAL = "internal", "Internal (signed-in staff)"
        AUDIENCE = "audience", "Audience (named customers)"

    slug = models.SlugField(max_length=60, unique=True, help_text="Served at /p/<slug>/.")
    host = models.CharField(
        max_length=253,
        blank=True,
        default="",
        help_text="A host name that serves this page at / (also in ALLOWED_HOSTS); empty: none.",
    )
    allowed_networks = models.JSONField(
        default=list,
        blank=True,
        help_text="CIDR ranges (one per line) a reader must come from; empty: any address.",
    )
    title = models.CharField(max_length=120)
    intro = models.TextField(blank=True, help_text="Shown under the title (Markdown).")
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.INTERNAL)
    products = models.ManyToManyField(Product, blank=True, related_name="+")
    locations = models.ManyToManyField(
        Location, blank=True, related_name="+", help_text="Empty: every location of the products."
    )
    customers = models.ManyToManyField(Customer, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(visibility__in=["public", "internal", "audience"]), name="page_visibility_valid"
            ),
            models.UniqueConstraint(fields=["host"], condition=~Q(host=""), name="page_host_unique"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_private(self) -> bool:
        return self.visibility != self.Visibility.PUBLIC


# The choices by a name the API schema can import (statuspage.api_schema).
PageVisibility = Page.Visibility


class PageKey(models.Model):
    """A secret that reads one private page's JSON without signing in (a subscriber's
    feed reader, a customer's monitoring). Only its SHA-256 is stored."""

    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="keys")
    label = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.page.slug}: {self.label}"

    @staticmethod
    def digest_of(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()


class UpdateWords(models.Model):
    """What one update says to private readers besides its public message."""

    update = models.OneToOneField(IncidentUpdate, on_delete=models.CASCADE, related_name="audience_words")
    audience_message = models.TextField(blank=True, help_text="Audience pages only (Markdown).")
    internal_note = models.TextField(blank=True, help_text="Internal pages and staff only (Markdown).")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"words of update {self.update_id}"
