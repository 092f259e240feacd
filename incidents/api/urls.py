"""API routes, included at the site root by statuspage/urls.py (so full paths here)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from credits.api import register as register_credits
from incidents.api import google_feed, statuspage_v2, views
from incidents.api.routers import build_router

router = build_router()

# --- Other apps: register staff-only viewsets on `router` here (see routers.py) -----------
# e.g.  from credits.api import register as register_credits; register_credits(router)
register_credits(router)  # customers, sla-policies, credit-notices
# --------------------------------------------------------------------------------------------

v2 = statuspage_v2
urlpatterns: list[URLPattern | URLResolver] = [
    path("api/v1/status/", views.OverallStatusView.as_view(), name="api-status"),
    path("api/v1/", include(router.urls)),
    path("api/v2/summary.json", v2.SummaryView.as_view(), name="v2-summary"),
    path("api/v2/status.json", v2.StatusView.as_view(), name="v2-status"),
    path("api/v2/components.json", v2.ComponentsView.as_view(), name="v2-components"),
    path("api/v2/incidents.json", v2.IncidentsView.as_view(), name="v2-incidents"),
    path("api/v2/incidents/unresolved.json", v2.UnresolvedIncidentsView.as_view(), name="v2-unresolved"),
    path("api/v2/scheduled-maintenances.json", v2.MaintenancesView.as_view(), name="v2-maintenances"),
    path(
        "api/v2/scheduled-maintenances/upcoming.json",
        v2.UpcomingMaintenancesView.as_view(),
        name="v2-maintenances-upcoming",
    ),
    path(
        "api/v2/scheduled-maintenances/active.json",
        v2.ActiveMaintenancesView.as_view(),
        name="v2-maintenances-active",
    ),
    path("incidents.json", google_feed.GoogleIncidentsView.as_view(), name="google-incidents"),
    path("products.json", google_feed.GoogleProductsView.as_view(), name="google-products"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its init script from a URL, not inline: works under a CSP
    # without 'unsafe-inline', and the assets come from drf-spectacular-sidecar.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Last: anything else under /api/ is a JSON 404 in the API's error shape.
    re_path(r"^api/", views.APINotFound.as_view(), name="api-not-found"),
]
