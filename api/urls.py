"""API routes, included at the site root by statuspage/urls.py (so full paths here)."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularSwaggerSplitView

from api import alerts, base, google_feed, incidents, keys, mcp_view, statuspage_v2, uptime
from api.routers import build_router
from api.schema_view import SchemaView
from edge.page_cache import public_page

router = build_router()

v2 = statuspage_v2


def cached(name: str, view: type) -> Any:
    """A public read served through the versioned page cache (edge.page_cache)."""
    return public_page(name)(view.as_view())  # type: ignore[attr-defined]


urlpatterns: list[URLPattern | URLResolver] = [
    path("api/v1/status/", incidents.OverallStatusView.as_view(), name="api-status"),
    path(
        "api/v1/integrations/<int:integration_id>/alerts/",
        alerts.AlertIntakeView.as_view(),
        name="api-alert-intake",
    ),
    path(
        "api/v1/products/<slug:slug>/uptime/",
        public_page("api-v1-product-uptime")(uptime.ProductUptimeView.as_view()),
        name="api-product-uptime",
    ),
    path("api/v1/keys/", keys.ApiKeyListView.as_view(), name="api-key-list"),
    path("api/v1/keys/<int:key_id>/", keys.ApiKeyDetailView.as_view(), name="api-key-detail"),
    path("api/v1/", include(router.urls)),
    path("api/v2/summary.json", cached("api-v2-summary", v2.SummaryView), name="v2-summary"),
    path("api/v2/status.json", cached("v2-status", v2.StatusView), name="v2-status"),
    path("api/v2/components.json", cached("v2-components", v2.ComponentsView), name="v2-components"),
    path("api/v2/incidents.json", cached("v2-incidents", v2.IncidentsView), name="v2-incidents"),
    path(
        "api/v2/incidents/unresolved.json",
        cached("v2-unresolved", v2.UnresolvedIncidentsView),
        name="v2-unresolved",
    ),
    path(
        "api/v2/scheduled-maintenances.json",
        cached("v2-maintenances", v2.MaintenancesView),
        name="v2-maintenances",
    ),
    path(
        "api/v2/scheduled-maintenances/upcoming.json",
        cached("v2-maintenances-upcoming", v2.UpcomingMaintenancesView),
        name="v2-maintenances-upcoming",
    ),
    path(
        "api/v2/scheduled-maintenances/active.json",
        cached("v2-maintenances-active", v2.ActiveMaintenancesView),
        name="v2-maintenances-active",
    ),
    path(
        "incidents.json", cached("google-incidents", google_feed.GoogleIncidentsView), name="google-incidents"
    ),
    path("products.json", cached("google-products", google_feed.GoogleProductsView), name="google-products"),
    # The MCP server over streamable HTTP (api.mcp_tools; docs/api.md#mcp).
    path("mcp", mcp_view.McpView.as_view(), name="mcp"),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    # The split view serves its init script from a URL, not inline: works under a CSP
    # without 'unsafe-inline', and the assets come from drf-spectacular-sidecar.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Staff page (HTML, session + CSRF) where staff create and revoke their API keys.
    path("api/keys/", keys.api_keys, name="api-keys"),
    # Last: anything else under /api/ is a JSON 404 in the API's error shape.
    re_path(r"^api/", base.APINotFound.as_view(), name="api-not-found"),
]
