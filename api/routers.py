"""The v1 router: every v1 resource, registered in one place (api/urls.py builds it)."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from api import credits, incidents, subscribers
from api.base import APIRoot


class V1Router(DefaultRouter):
    APIRootView = APIRoot


def build_router() -> V1Router:
    router = V1Router()
    router.register("products", incidents.ProductViewSet, basename="product")
    router.register("locations", incidents.LocationViewSet, basename="location")
    router.register("incidents", incidents.IncidentViewSet, basename="incident")
    router.register("maintenance", incidents.MaintenanceViewSet, basename="maintenance")
    router.register("action-items", incidents.ActionItemViewSet, basename="action-item")
    credits.register(router)  # customers, sla-policies, credit-notices (staff)
    subscribers.register(router)  # subscribers and their webhooks (staff)
    return router
