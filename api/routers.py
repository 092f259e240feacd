"""The v1 router: every v1 resource, registered in one place (api/urls.py builds it)."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from api import (
    alert_integrations,
    catalogue,
    credits,
    customers,
    incidents,
    pages,
    postmortems,
    sla_policies,
    subscribers,
    templates,
)
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
    postmortems.register(router)  # timeline entries, links and the timeline under an incident (staff)
    credits.register(router)  # credit-notices (staff)
    subscribers.register(router)  # subscribers and their webhooks (staff)
    # --- Issue 31, catalogue and incident parts (products/locations write in api/products.py)
    router.register("product-groups", catalogue.ProductGroupViewSet, basename="product-group")
    router.register("templates", templates.TemplateViewSet, basename="template")
    router.register("pages", pages.PageViewSet, basename="page")
    # --- end catalogue
    # --- Issue 31, administration: customers, SLA policies, alert integrations and rules ---
    router.register("customers", customers.CustomerViewSet, basename="customer")
    router.register("sla-policies", sla_policies.SLAPolicyViewSet, basename="sla-policy")
    router.register(
        "alert-integrations", alert_integrations.AlertIntegrationViewSet, basename="alert-integration"
    )
    router.register("alert-rules", alert_integrations.AlertRuleViewSet, basename="alert-rule")
    # --- end of the administration block ---
    return router
