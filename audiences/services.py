"""Writes of the audience pages: pages, their keys and the words of an update.

Every write checks `page.manage` (words: `incident.update`) here, next to the write, so
the console, the API and the demo loader agree. Design: docs/adr/0028-audience-pages.md.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audiences.models import WORDS_VERSION_KEY, Page, PageKey, UpdateWords
from core import roles
from core.text import clean_single_line, clean_text
from credits.models import Customer
from incidents.models import IncidentUpdate, Location, Product

RESERVED_SLUGS = frozenset({"api", "login", "logout", "portal"})


def _changed() -> None:
    def bump() -> None:
        try:
            cache.incr(WORDS_VERSION_KEY)
        except ValueError:  # gone (a flushed cache): a time, unlike any value before
            cache.set(WORDS_VERSION_KEY, time.time_ns(), None)

    transaction.on_commit(bump)


def _validate(
    *,
    slug: str,
    visibility: str,
    products: list[Product],
    customers: list[Customer],
    page: Page | None,
) -> None:
    errors: dict[str, str] = {}
    others = Page.objects.exclude(pk=page.pk) if page is not None else Page.objects.all()
    if slug in RESERVED_SLUGS:
        errors["slug"] = f"“{slug}” is reserved."
    elif others.filter(slug=slug).exists():
        errors["slug"] = "Another page has this slug."
    if visibility not in Page.Visibility.values:
        errors["visibility"] = "Choose public, internal or audience."
    elif visibility == Page.Visibility.PUBLIC and any(not p.is_public for p in products):
        # A public page must not show what the public page hides.
        errors["products"] = "A public page can only show public products."
    elif visibility != Page.Visibility.AUDIENCE and customers:
        errors["customers"] = "Only an audience page names customers."
    if errors:
        raise ValidationError(errors)


# A host name: dot-separated labels of letters, digits and inner hyphens.
_HOST = re.compile(
    r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$"
)
MAX_NETWORKS = 50


def clean_host(host: str, *, page: Page | None) -> str:
    """A page's host name, lower case, or empty; refused when malformed or another page's."""
    host = (host or "").strip().lower().rstrip(".")
    if not host:
        return ""
    if not _HOST.match(host):
        raise ValidationError({"host": f"“{host}” is not a host name (e.g. status.example.com)."})
    others = Page.objects.exclude(pk=page.pk) if page is not None else Page.objects.all()
    if others.filter(host=host).exists() or host in settings.PAGE_HOSTS:
        raise ValidationError({"host": "Another page has this host name."})
    return host


def clean_networks(networks: Iterable[str]) -> list[str]:
    """CIDR ranges (an address alone is one host), normalised; a bad one is refused by name."""
    cleaned: list[str] = []
    for entry in (str(n).strip() for n in networks):
        if not entry:
            continue
        try:
            network = str(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValidationError(
                {"allowed_networks": f"“{entry[:60]}” is not an address range (e.g. 203.0.113.0/24)."}
            ) from None
        if network not in cleaned:
            cleaned.append(network)
    if len(cleaned) > MAX_NETWORKS:
        raise ValidationError({"allowed_networks": f"At most {MAX_NETWORKS} ranges."})
    return cleaned


def page_save(
    *,
    actor: Any,
    page: Page | None = None,
    slug: str,
    title: str,
    intro: str = "",
    visibility: str,
    products: Iterable[Product] = (),
    locations: Iterable[Location] = (),
    customers: Iterable[Customer] = (),
    host: str | None = None,
    allowed_networks: Iterable[str] | None = None,
) -> Page:
    """Create (`page=None`) or replace a page and what it shows; `host` and
    `allowed_networks` left None keep what the page had (none for a new page)."""
    roles.check(actor, "page.manage")
    product_list, customer_list = list(products), list(customers)
    _validate(slug=slug, visibility=visibility, products=product_list, customers=customer_list, page=page)
    host = clean_host(host, page=page) if host is not None else None
    networks = clean_networks(allowed_networks) if allowed_networks is not None else None
    with transaction.atomic():
        target = page or Page()
        target.slug = slug
        if host is not None:
            target.host = host
        if networks is not None:
            target.allowed_networks = networks
        target.title = clean_single_line(title, field="title", max_length=120)
        target.intro = clean_text(intro, field="intro", max_length=5000)
        target.visibility = visibility
        target.full_clean(exclude=["products", "locations", "customers"])
        target.save()
        target.products.set(product_list)
        target.locations.set(list(locations))
        target.customers.set(customer_list)
        _changed()
    return target


def page_delete(*, actor: Any, page: Page) -> None:
    roles.check(actor, "page.manage")
    with transaction.atomic():
        page.delete()
        _changed()


def page_key_create(*, actor: Any, page: Page, label: str) -> tuple[PageKey, str]:
    """A new key for a private page's JSON; the secret is returned once and never stored."""
    roles.check(actor, "page.manage")
    secret = "pk_" + secrets.token_urlsafe(24)
    key = PageKey.objects.create(
        page=page,
        label=clean_single_line(label, field="label", max_length=100),
        digest=PageKey.digest_of(secret),
        created_by=actor,
    )
    return key, secret


def page_key_revoke(*, actor: Any, key: PageKey) -> None:
    roles.check(actor, "page.manage")
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])


def update_words_set(
    *, actor: Any, update: IncidentUpdate, audience_message: str = "", internal_note: str = ""
) -> UpdateWords | None:
    """Set (or clear, when both are empty) what an update says to private readers."""
    roles.check(actor, "incident.update")
    audience_message = clean_text(audience_message, field="audience_message")
    internal_note = clean_text(internal_note, field="internal_note")
    with transaction.atomic():
        if not audience_message.strip() and not internal_note.strip():
            UpdateWords.objects.filter(update=update).delete()
            _changed()
            return None
        words, _created = UpdateWords.objects.update_or_create(
            update=update, defaults={"audience_message": audience_message, "internal_note": internal_note}
        )
        _changed()
    return words
