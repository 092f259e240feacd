from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from edge.page_cache import public_page
from public_site import feeds, views

app_name = "public"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.status_index, name="index"),
    path("incidents/<str:public_id>/", views.incident_detail, name="incident"),
    path("products/<slug:slug>/", views.product_detail, name="product"),
    path("products/<slug:slug>/uptime/", views.product_uptime, name="product-uptime"),
    path("products/<slug:slug>/uptime.csv", views.product_uptime_csv, name="product-uptime-csv"),
    path("history/", views.history, name="history"),
    # The feeds are the same for every reader: served from the versioned page cache.
    path("history.atom", public_page("history-atom")(feeds.HistoryAtomFeed()), name="history-atom"),
    path("history.rss", public_page("history-rss")(feeds.HistoryRssFeed()), name="history-rss"),
]
