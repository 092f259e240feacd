"""Atom and RSS feeds of the incident history, for the whole page and per product: one
entry per incident, latest state. Entry dates are never in the future (FeedEntry).

Every link is absolute on settings.SITE_URL, never the request's Host: a feed is cached
and served to every reader, so the first requester must not choose its links.
Entry HTML is built from escaped fields (format_html) and user Markdown rendered by the
one sanitising function, so nothing raw from a user reaches a feed reader.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.feedgenerator import SyndicationFeed
from django.utils.html import format_html, format_html_join

from core.timezones import display_zone_active
from edge.models import RenderProblem
from edge.render_problems import render_problem_clear, render_problem_record
from incidents.markdown import stored_html
from incidents.models import Product
from public_site import history as public_history
from public_site import websub
from public_site.embeds import feed_description, feed_title, public_product
from public_site.history import FeedEntry

logger = logging.getLogger(__name__)

# The entries that rendered in the feed being built by this thread (a Feed instance is
# shared by every request), so their render problems can be cleared in one go.
_building = threading.local()


def absolute(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


class HistoryRssFeed(Feed):
    """The page's history; the Product* subclasses below narrow it to one product (the
    methods that take `product` get the object `get_object` returned)."""

    feed_type: type[SyndicationFeed] = websub.HubRssFeed
    url_name = "feeds:history-rss"

    def __call__(self, request: HttpRequest, *args, **kwargs):  # type: ignore[no-untyped-def]
        # Entry text names times in the display zone, like the pages do.
        with display_zone_active():
            return super().__call__(request, *args, **kwargs)

    def feed_extra_kwargs(self, obj: Any) -> dict[str, Any]:
        # The generators below add <link rel="hub"> only when a hub is configured.
        return {"hub": websub.hub_url()}

    def title(self, product: Product | None) -> str:
        return feed_title(product)

    def link(self, product: Product | None) -> str:
        if product is not None:
            return absolute(reverse("public:product", args=[product.slug]))
        return absolute(reverse("public:history"))

    def feed_url(self, product: Product | None) -> str:
        return absolute(reverse(self.url_name, args=[product.slug] if product is not None else []))

    def description(self, product: Product | None) -> str:
        return feed_description(product)

    # RFC 4287 wants an author for every entry: the organisation, once for the feed.
    def author_name(self) -> str:
        return settings.SITE_NAME

    def author_link(self) -> str:
        return absolute("/")

    def items(self, product: Product | None) -> list[FeedEntry]:
        return public_history.feed_entries(product=product)

    def item_title(self, item: FeedEntry) -> str:
        return f"{item.incident.get_status_display()}: {item.incident.title}"

    def item_link(self, item: FeedEntry) -> str:
        return absolute(reverse("public:incident", args=[item.incident.public_id]))

    def item_guid(self, item: FeedEntry) -> str:
        return f"incident:{item.incident.public_id}"

    item_guid_is_permalink = False

    def get_feed(self, obj: Any, request: HttpRequest) -> SyndicationFeed:
        rendered: list[str] = []
        _building.rendered = rendered
        try:
            return super().get_feed(obj, request)
        finally:
            del _building.rendered
            render_problem_clear(kind=RenderProblem.Kind.FEED_ENTRY, keys=rendered)

    def item_description(self, item: FeedEntry) -> str:
        # One entry that cannot be described degrades to its title; the feed still answers,
        # and staff see the problem on the console's Now page until the entry renders.
        public_id = str(item.incident.public_id)
        try:
            description = self._description(item)
        except Exception as exc:
            logger.exception("feed entry %s could not be rendered", public_id)
            render_problem_record(
                kind=RenderProblem.Kind.FEED_ENTRY,
                key=public_id,
                label=f"{item.incident.title} ({public_id})",
                error=exc,
            )
            return format_html("<p>{}</p>", item.incident.title)
        rendered = getattr(_building, "rendered", None)
        if rendered is not None:
            rendered.append(public_id)
        return description

    def _description(self, item: FeedEntry) -> str:
        # Plain str: the feed generator escapes it into the XML as HTML text.
        parts: list[str] = []
        if item.products:
            parts.append(
                format_html(
                    "<p>Affected: {}</p>",
                    format_html_join(", ", "{}", ((p.name,) for p in item.products)),
                )
            )
        update = item.latest_update
        if update is not None:
            parts.append(
                format_html(
                    "<p><strong>{}</strong> ({} {})</p>",
                    update.get_status_display(),
                    format_date(timezone.localtime(update.display_at), "D j M Y, H:i T"),
                    settings.DISPLAY_TIME_ZONE,
                )
            )
            parts.append(stored_html(update.body_html))
        elif item.incident.summary:
            parts.append(stored_html(item.incident.summary_html))
        return "".join(parts)

    def item_pubdate(self, item: FeedEntry) -> datetime:
        return item.published_at

    def item_updateddate(self, item: FeedEntry) -> datetime:
        return item.updated_at

    def item_categories(self, item: FeedEntry) -> list[str]:
        return [item.incident.get_kind_display(), *(p.name for p in item.products)]


class HistoryAtomFeed(HistoryRssFeed):
    feed_type = websub.HubAtomFeed
    url_name = "feeds:history-atom"

    def subtitle(self, product: Product | None) -> str:
        return self.description(product)


class _OneProduct:
    def get_object(self, request: HttpRequest, slug: str) -> Product:
        return public_product(slug)


class ProductHistoryRssFeed(_OneProduct, HistoryRssFeed):
    url_name = "feeds:product-history-rss"


class ProductHistoryAtomFeed(_OneProduct, HistoryAtomFeed):
    url_name = "feeds:product-history-atom"
