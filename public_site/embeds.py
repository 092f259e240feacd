"""Things other sites embed or poll: SVG status badges and JSON Feed 1.1.

Every view here is public and the same for everyone: each goes through
`edge.page_cache.public_page` (versioned cache, ETag, 304, Cache-Control, no cookies),
and edge.middleware.PublicCorsMiddleware lets other origins read them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html, format_html_join

from core.text import site_title
from incidents.markdown import stored_html
from incidents.models import Product
from incidents.selectors import (
    PRODUCT_STATUS_LABELS,
    product_statuses,
    products_public,
    status_summary,
)
from public_site import history as public_history
from public_site.history import FeedEntry

# --- Badges ------------------------------------------------------------------------------------

# Fill colours per product level (the page's palette, each at least 4.5:1 with white text,
# WCAG AA; tests/public/test_axe.py measures them).
BADGE_COLOURS = {
    "operational": "#188038",
    "under_maintenance": "#1558b0",
    "degraded_performance": "#9e6500",
    "partial_outage": "#c25400",
    "major_outage": "#c5221f",
}
LABEL_COLOUR = "#555555"
# Verdana-ish 11 px averages about 6.5 px a character; a badge a little too wide beats
# clipped text, and the SVG carries the words in <title> for screen readers anyway.
CHAR_WIDTH = 6.5
PADDING = 10


@dataclass(frozen=True)
class Badge:
    label: str
    message: str
    level: str

    @property
    def colour(self) -> str:
        return BADGE_COLOURS.get(self.level, LABEL_COLOUR)

    @property
    def label_width(self) -> int:
        return round(len(self.label) * CHAR_WIDTH) + 2 * PADDING

    @property
    def message_width(self) -> int:
        return round(len(self.message) * CHAR_WIDTH) + 2 * PADDING

    @property
    def width(self) -> int:
        return self.label_width + self.message_width

    @property
    def label_x(self) -> float:
        return self.label_width / 2

    @property
    def message_x(self) -> float:
        return self.label_width + self.message_width / 2

    @property
    def text(self) -> str:
        return f"{self.label}: {self.message}"


def badge_response(badge: Badge) -> HttpResponse:
    body = render_to_string("public/badge.svg", {"badge": badge})
    return HttpResponse(body, content_type="image/svg+xml; charset=utf-8")


def page_badge(request: HttpRequest) -> HttpResponse:
    banner = status_summary(now=timezone.now()).banner
    return badge_response(
        Badge(
            label=site_title(settings.SITE_NAME),
            message=banner.description,
            level=banner.level,
        )
    )


def public_product(slug: str) -> Product:
    try:
        return products_public().get(slug=slug)
    except Product.DoesNotExist:
        raise Http404("No such product.") from None


def product_badge_snippet(product: Product) -> str:
    """The HTML another site pastes to show this product's badge, linked to its page; shown
    as text on the product page. Absolute on SITE_URL. No script: the status-embed script
    reads the page's overall status, the badge alone says the product's."""
    page = settings.SITE_URL + reverse("public:product", args=[product.slug])
    badge = settings.SITE_URL + reverse("feeds:product-badge", args=[product.slug])
    return (
        f'<a href="{escape(page)}"><img src="{escape(badge)}" '
        f'alt="{escape(product.name)} status" height="20"></a>'
    )


def product_badge(request: HttpRequest, slug: str) -> HttpResponse:
    product = public_product(slug)
    level = product_statuses(at=timezone.now(), products=[product]).get(product.pk, "operational")
    return badge_response(Badge(label=product.name, message=str(PRODUCT_STATUS_LABELS[level]), level=level))


# --- JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/) -------------------------------------

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
JSON_FEED_TYPE = "application/feed+json"


def _content_html(entry: FeedEntry) -> str:
    # Escaped fields and the HTML stored at write time, as in the Atom feed.
    parts: list[str] = []
    if entry.products:
        parts.append(
            format_html(
                "<p>Affected: {}</p>", format_html_join(", ", "{}", ((p.name,) for p in entry.products))
            )
        )
    update = entry.latest_update
    if update is not None:
        parts.append(format_html("<p><strong>{}</strong></p>", update.get_status_display()))
        parts.append(stored_html(update.body_html))
    elif entry.incident.summary:
        parts.append(stored_html(entry.incident.summary_html))
    return "".join(parts) or format_html("<p>{}</p>", entry.incident.title)


def feed_title(product: Product | None) -> str:
    """The title of the history feeds (Atom, RSS, JSON Feed), of the page or one product."""
    if product is not None:
        return f"{product.name} incident history · {site_title(settings.SITE_NAME)}"
    return f"{settings.SITE_NAME} incident history"


def feed_description(product: Product | None) -> str:
    # site_title: "on the Status page", never "on the Status status page".
    of = f" of {product.name}" if product is not None else ""
    return (
        f"Incidents and scheduled maintenance{of} on the {site_title(settings.SITE_NAME)} page, newest first."
    )


def json_feed_document(
    *, entries: list[FeedEntry], product: Product | None, feed_path: str
) -> dict[str, Any]:
    items = []
    for entry in entries:
        incident = entry.incident
        item: dict[str, Any] = {
            "id": f"incident:{incident.public_id}",
            # SITE_URL, not the request's Host: the feed is cached for every reader.
            "url": f"{settings.SITE_URL}{reverse('public:incident', args=[incident.public_id])}",
            "title": f"{incident.get_status_display()}: {incident.title}",
            "content_html": _content_html(entry),
            "date_published": entry.published_at.isoformat(),
            "date_modified": entry.updated_at.isoformat(),
            "tags": [incident.get_kind_display(), *(p.name for p in entry.products)],
        }
        if incident.summary:
            item["summary"] = incident.summary
        items.append(item)
    home_path = reverse("public:product", args=[product.slug]) if product else reverse("public:history")
    return {
        "version": JSON_FEED_VERSION,
        "title": feed_title(product),
        "home_page_url": f"{settings.SITE_URL}{home_path}",
        "feed_url": f"{settings.SITE_URL}{feed_path}",
        "description": feed_description(product),
        "authors": [{"name": settings.SITE_NAME, "url": f"{settings.SITE_URL}/"}],
        "language": settings.LANGUAGE_CODE.split("-")[0],
        "items": items,
    }


def _json_feed_response(document: dict[str, Any]) -> HttpResponse:
    body = json.dumps(document, ensure_ascii=False, indent=1)
    return HttpResponse(body, content_type=f"{JSON_FEED_TYPE}; charset=utf-8")


def history_json_feed(request: HttpRequest) -> HttpResponse:
    document = json_feed_document(
        entries=public_history.feed_entries(), product=None, feed_path=reverse("feeds:history-json")
    )
    return _json_feed_response(document)


def product_json_feed(request: HttpRequest, slug: str) -> HttpResponse:
    product = public_product(slug)
    document = json_feed_document(
        entries=public_history.feed_entries(product=product),
        product=product,
        feed_path=reverse("feeds:product-history-json", args=[product.slug]),
    )
    return _json_feed_response(document)
