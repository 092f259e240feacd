"""Feeds, badges, the live version document, the uptime CSV, robots.txt and the sitemap:
one address each, not translated (readers and embeds key on the URL). Their names are
under `feeds:`."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from edge.page_cache import public_page
from public_site import crawlers, embeds, feeds, live, llms, views, websub

app_name = "feeds"

urlpatterns: list[URLPattern | URLResolver] = [
    path("products/<slug:slug>/uptime.csv", views.product_uptime_csv, name="product-uptime-csv"),
    path("live/version.json", live.live_version, name="live-version"),
    path("live/sections.json", live.live_sections, name="live-sections"),
    # The feeds are the same for every reader: served from the versioned page cache.
    path(
        "history.atom",
        websub.advertised(public_page("history-atom")(feeds.HistoryAtomFeed())),
        name="history-atom",
    ),
    path(
        "history.rss",
        websub.advertised(public_page("history-rss")(feeds.HistoryRssFeed())),
        name="history-rss",
    ),
    path("history.json", public_page("history-json")(embeds.history_json_feed), name="history-json"),
    # Per product, the same three formats at the same addresses under the product.
    path(
        "products/<slug:slug>/history.atom",
        websub.advertised(public_page("product-history-atom")(feeds.ProductHistoryAtomFeed())),
        name="product-history-atom",
    ),
    path(
        "products/<slug:slug>/history.rss",
        websub.advertised(public_page("product-history-rss")(feeds.ProductHistoryRssFeed())),
        name="product-history-rss",
    ),
    path(
        "products/<slug:slug>/history.json",
        public_page("product-history-json")(embeds.product_json_feed),
        name="product-history-json",
    ),
    path("badge.svg", public_page("badge", cheap=True)(embeds.page_badge), name="badge"),
    path(
        "products/<slug:slug>/badge.svg",
        public_page("product-badge", cheap=True)(embeds.product_badge),
        name="product-badge",
    ),
    path("robots.txt", crawlers.robots_txt, name="robots"),
    path("llms.txt", public_page("llms-txt")(llms.llms_txt), name="llms-txt"),
    path("sitemap.xml", public_page("sitemap")(crawlers.sitemap), name="sitemap"),
]
