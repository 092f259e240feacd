"""Reads of the audience pages: who may read a page, and what it shows.

One gate (`page_get_for_reader`) decides for every interface (page, JSON); anyone it
refuses gets the same 404 as a page that does not exist, so a private page's slug,
title or existence never shows. A page shows its products (in its locations) and the
published incidents with a window on them, each with the duration that touched the
page. Design: docs/adr/0028-audience-pages.md.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest
from django.http.request import validate_host

from audiences.models import WORDS_VERSION_KEY, Page, PageKey, UpdateWords
from incidents.models import ImpactWindow, Incident, IncidentStatus, IncidentUpdate, Location, Product
from incidents.selectors import (
    OPERATIONAL,
    PRODUCT_STATUS_LABELS,
    IncidentDurations,
    PageStatus,
    incident_durations,
    page_status,
    windows_counted,
    windows_overlapping,
    worst_level,
)

# The session keys the portal sets when a customer contact signs in (the portal room
# owns signing in; this room only reads who is signed in).
SESSION_CUSTOMER = "portal_customer_id"
SESSION_EMAIL = "portal_contact_email"
# How far back a page lists incidents.
RECENT_DAYS = 90
RECENT_LIMIT = 25
# How far ahead a page lists planned maintenance.
MAINTENANCE_AHEAD = timedelta(days=14)
NOT_FOUND = "No such page."

logger = logging.getLogger(__name__)


def signed_in_customer_id(request: HttpRequest) -> int | None:
    """The customer whose contact signed in through the portal, if any."""
    value = request.session.get(SESSION_CUSTOMER) if hasattr(request, "session") else None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _is_staff(user: Any) -> bool:
    return bool(getattr(user, "is_active", False) and getattr(user, "is_staff", False))


def address_allowed(*, page: Page, address: str | None) -> bool:
    """A page with an allowlist answers only readers from one of its networks."""
    if not page.allowed_networks:
        return True
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in ipaddress.ip_network(net, strict=False) for net in page.allowed_networks)


def page_readable(
    *, page: Page, user: Any, customer_id: int | None, key: str | None = None, address: str | None = None
) -> bool:
    """Only readers from its networks, if it lists any. Then: public pages, everyone.
    Internal: signed-in staff. Audience: staff, contacts of one of its customers, or the
    holder of one of its live keys."""
    if not address_allowed(page=page, address=address):
        return False
    if page.visibility == Page.Visibility.PUBLIC or _is_staff(user):
        return True
    if (
        key
        and PageKey.objects.filter(page=page, digest=PageKey.digest_of(key), revoked_at__isnull=True).exists()
    ):
        return True
    if page.visibility == Page.Visibility.AUDIENCE and customer_id is not None:
        return page.customers.filter(pk=customer_id).exists()
    return False


def page_get_for_reader(
    *, slug: str, user: Any, customer_id: int | None, key: str | None = None, address: str | None = None
) -> Page:
    """The access gate: the page, or a 404 that says nothing about it."""
    page = Page.objects.filter(slug=slug).first()
    if page is None or not page_readable(
        page=page, user=user, customer_id=customer_id, key=key, address=address
    ):
        raise Http404(NOT_FOUND)
    return page


# The host map of this process: (this room's write counter when read, {host: slug}).
_hosts: tuple[object, dict[str, str]] | None = None


def page_for_host(host: str) -> str | None:
    """The slug of the page served at `host` (settings.PAGE_HOSTS first, then the pages'
    own host names), or None. The pages' map is read again only when this room's write
    counter moves; a counter gone with a flushed cache keeps the map this process has."""
    global _hosts
    if not host or not validate_host(host, settings.ALLOWED_HOSTS):
        return None  # Django refuses it anyway (400): no lookup for it
    if host in settings.PAGE_HOSTS:
        return str(settings.PAGE_HOSTS[host])
    try:
        counter = cache.get(WORDS_VERSION_KEY)
    except Exception:  # noqa: BLE001 - the cache is down (its breaker has logged it): keep the map
        counter = None
    if _hosts is None or (counter is not None and counter != _hosts[0]):
        try:
            hosts = dict(Page.objects.exclude(host="").values_list("host", "slug"))
        except DatabaseError:  # the database is down: the map this process had (the page stays up)
            logger.warning("could not read the pages' host names")
            return _hosts[1].get(host) if _hosts is not None else None
        _hosts = (counter, hosts)
    return _hosts[1].get(host)


def pages_all() -> QuerySet[Page]:
    return Page.objects.prefetch_related("products", "locations", "customers").order_by("title", "id")


# --- What a page shows ---------------------------------------------------------------------


def _location_ids(locations: Iterable[Location]) -> set[int] | None:
    """The locations a page's scope covers: its own, their zones and their regions (a
    region-wide window touches a zone's customers). None: no scope, every location."""
    chosen = list(locations)
    if not chosen:
        return None
    ids = {loc.pk for loc in chosen}
    ids |= {loc.parent_id for loc in chosen if loc.parent_id}
    ids |= set(Location.objects.filter(parent__in=[loc.pk for loc in chosen]).values_list("pk", flat=True))
    return ids


def page_windows(*, page: Page, products: list[Product], locations: list[Location]) -> QuerySet[ImpactWindow]:
    """Counted windows (published incidents) on the page's products, in its locations."""
    windows = windows_counted().filter(product__in=[p.pk for p in products])
    ids = _location_ids(locations)
    if ids is not None:
        windows = windows.filter(Q(location__isnull=True) | Q(location__in=ids))
    return windows


@dataclass(frozen=True)
class ProductRow:
    product: Product
    level: str

    @property
    def label(self) -> str:
        return str(PRODUCT_STATUS_LABELS.get(self.level, self.level))


@dataclass(frozen=True)
class UpdateEntry:
    update: IncidentUpdate
    audience_message: str  # empty unless the reader's page shows it
    internal_note: str


@dataclass(frozen=True)
class IncidentEntry:
    incident: Incident
    windows: tuple[ImpactWindow, ...]
    durations: IncidentDurations  # over the windows that touched this page only
    updates: tuple[UpdateEntry, ...]

    @property
    def ongoing(self) -> bool:
        return self.incident.resolved_at is None and self.incident.status not in Incident.CLOSED_STATUSES

    @property
    def planned(self) -> bool:
        """Maintenance that has not begun."""
        return self.incident.status == IncidentStatus.SCHEDULED


@dataclass(frozen=True)
class PageView:
    page: Page
    banner: PageStatus
    products: tuple[ProductRow, ...]
    locations: tuple[Location, ...]
    active: tuple[IncidentEntry, ...]
    planned: tuple[IncidentEntry, ...]
    recent: tuple[IncidentEntry, ...]


def _words_for(page: Page, words: UpdateWords | None) -> tuple[str, str]:
    if words is None:
        return "", ""
    audience = words.audience_message if page.visibility == Page.Visibility.AUDIENCE else ""
    internal = words.internal_note if page.visibility == Page.Visibility.INTERNAL else ""
    return audience, internal


def _entries(page: Page, windows: list[ImpactWindow], *, now: datetime) -> list[IncidentEntry]:
    by_incident: dict[int, list[ImpactWindow]] = {}
    for window in windows:
        by_incident.setdefault(window.incident_id, []).append(window)
    incidents = (
        Incident.objects.filter(pk__in=list(by_incident))
        .prefetch_related("updates")
        .order_by("-started_at", "-id")[:RECENT_LIMIT]
    )
    incident_list = list(incidents)
    update_ids = [u.pk for i in incident_list for u in i.updates.all()]
    words = {w.update_id: w for w in UpdateWords.objects.filter(update__in=update_ids)}
    entries = []
    for incident in incident_list:
        own = by_incident[incident.pk]
        updates = sorted(incident.updates.all(), key=lambda u: (u.display_at, u.pk), reverse=True)
        entries.append(
            IncidentEntry(
                incident=incident,
                windows=tuple(own),
                durations=incident_durations(incident=incident, windows=own, now=now),
                updates=tuple(UpdateEntry(u, *_words_for(page, words.get(u.pk))) for u in updates),
            )
        )
    return entries


def page_view(*, page: Page, now: datetime) -> PageView:
    """Everything a page shows, in a fixed number of queries."""
    products = list(page.products.order_by("position", "name"))
    locations = list(page.locations.order_by("name"))
    windows = list(
        windows_overlapping(
            page_windows(page=page, products=products, locations=locations),
            since=now - timedelta(days=RECENT_DAYS),
            until=now + MAINTENANCE_AHEAD,
        )
        .select_related("product", "location")
        .order_by("started_at", "id")
    )
    levels: dict[int, str] = {}
    for w in windows:
        if w.started_at <= now and (w.ended_at is None or w.ended_at > now):
            levels[w.product_id] = worst_level([levels.get(w.product_id, OPERATIONAL), w.level])
    rows = tuple(ProductRow(p, levels.get(p.pk, OPERATIONAL)) for p in products)
    entries = _entries(page, windows, now=now)
    active = tuple(e for e in entries if e.ongoing and not e.planned)
    unresolved = [e.incident.impact for e in active if e.incident.kind == Incident.Kind.INCIDENT]
    return PageView(
        page=page,
        banner=page_status(statuses=[r.level for r in rows], unresolved_impacts=unresolved),
        products=rows,
        locations=tuple(locations),
        active=active,
        planned=tuple(e for e in entries if e.planned),
        recent=tuple(e for e in entries if not e.ongoing),
    )


def page_incident(*, page: Page, public_id: str, now: datetime) -> IncidentEntry:
    """One incident as the page shows it: a published one with a window on the page's
    products in its locations, whenever it happened; anything else is the page's 404."""
    products = list(page.products.all())
    windows = list(
        page_windows(page=page, products=products, locations=list(page.locations.all()))
        .filter(incident__public_id=public_id)
        .select_related("product", "location")
        .order_by("started_at", "id")
    )
    if not windows:
        raise Http404(NOT_FOUND)
    return _entries(page, windows, now=now)[0]


def pages_showing_update(*, incident: Incident) -> list[Page]:
    """The audience pages an incident's updates show on (the console's update form says so)."""
    pages = []
    windows = list(incident.windows.all())
    for page in pages_all():
        products = list(page.products.all())
        locations = list(page.locations.all())
        ids = _location_ids(locations)
        product_ids = {p.pk for p in products}
        if any(
            w.product_id in product_ids and (ids is None or w.location_id is None or w.location_id in ids)
            for w in windows
        ):
            pages.append(page)
    return pages
