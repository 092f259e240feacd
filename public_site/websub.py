"""WebSub (W3C): the public feeds name a hub, and the hub hears of every public change.

With WEBSUB_HUB_URL set, every Atom/RSS feed carries `<link rel="hub">` (an `atom:link`
in RSS) and an HTTP `Link: <hub>; rel="hub", <feed>; rel="self"` header; after each public
write commits (edge.version's `bumped`), a task POSTs `hub.mode=publish` with the feeds'
URLs to the hub, retried with backoff. Pinging twice is harmless: the hub only refetches.
Unset, nothing changes. Design: docs/adr/0032-mcp-server.md.
"""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed, Rss201rev2Feed

from incidents.selectors import products_public

logger = logging.getLogger(__name__)

PING_TIMEOUT = 10  # seconds


def hub_url() -> str:
    return str(getattr(settings, "WEBSUB_HUB_URL", "") or "")


def advertised(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The feed view with the hub in a `Link` header, outside the page cache (which keeps
    bodies, not headers)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        hub = hub_url()
        if hub and response.status_code in (200, 304):
            response["Link"] = f'<{hub}>; rel="hub", <{settings.SITE_URL}{request.path}>; rel="self"'
        return response

    return wrapped


class HubAtomFeed(Atom1Feed):
    def add_root_elements(self, handler) -> None:  # type: ignore[no-untyped-def]
        super().add_root_elements(handler)
        if self.feed.get("hub"):
            handler.addQuickElement("link", "", {"rel": "hub", "href": self.feed["hub"]})


class HubRssFeed(Rss201rev2Feed):
    def add_root_elements(self, handler) -> None:  # type: ignore[no-untyped-def]
        super().add_root_elements(handler)
        if self.feed.get("hub"):
            handler.addQuickElement("atom:link", None, {"rel": "hub", "href": self.feed["hub"]})


def feed_urls() -> list[str]:
    """Every public Atom/RSS feed: the page's and each public product's."""
    paths = [reverse("feeds:history-atom"), reverse("feeds:history-rss")]
    for slug in products_public().values_list("slug", flat=True):
        paths += [
            reverse("feeds:product-history-atom", args=[slug]),
            reverse("feeds:product-history-rss", args=[slug]),
        ]
    return [f"{settings.SITE_URL}{path}" for path in paths]


def ping_hub(hub: str, urls: list[str]) -> int:
    """POST hub.mode=publish for `urls`; the hub's status (raises on a network error or a
    refusal, so the task retries)."""
    if not hub.startswith(("http://", "https://")):
        raise ValueError(f"WEBSUB_HUB_URL must be an http(s) URL, not {hub!r}")
    body = urlencode([("hub.mode", "publish"), *(("hub.url", url) for url in urls)]).encode()
    request = urllib.request.Request(  # noqa: S310 - an http(s) URL, checked above
        hub, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=PING_TIMEOUT) as response:  # noqa: S310 - the configured hub
        return int(response.status)


def public_state_bumped(version: str) -> None:
    """edge.version listener: queue the hub ping once the public change committed."""
    if not hub_url():
        return
    from public_site.tasks import websub_publish

    try:
        websub_publish.delay()
    except Exception:  # noqa: BLE001 - the broker is away: the next change pings again
        logger.warning("could not queue the WebSub ping for version %s", version)
