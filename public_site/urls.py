from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from edge.page_cache import public_page
from public_site import embeds, feeds, live, views

app_name = "public"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.status_index, name="index"),
    path("incidents/<str:public_id>/", views.incident_detail, name="incident"),
    path("products/<slug:slug>/", views.product_detail, name="product"),
    path("products/<slug:slug>/uptime/", views.product_uptime, name="product-uptime"),
    path("products/<slug:slug>/uptime.csv", views.product_uptime_csv, name="product-uptime-csv"),
    path("history/", views.history, name="history"),
    path("live/version.json", live.live_version, name="live-version"),
    # The feeds are the same for every reader: served from the versioned page cache.
    path("history.atom", public_page("history-atom")(feeds.HistoryAtomFeed()), name="history-atom"),
    path("history.rss", public_page("history-rss")(feeds.HistoryRssFeed()), name="history-rss"),
    path("history.json", public_page("history-json")(embeds.history_json_feed), name="history-json"),
    path(
        "products/<slug:slug>/history.json",
        public_page("product-history-json")(embeds.product_json_feed),
        name="product-history-json",
    ),
    path("badge.svg", public_page("badge")(embeds.page_badge), name="badge"),
    path(
        "products/<slug:slug>/badge.svg",
        public_page("product-badge")(embeds.product_badge),
        name="product-badge",
    ),
]
