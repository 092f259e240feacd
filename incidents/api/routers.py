"""The v1 router. Other apps register their staff-only viewsets here.

How to add a resource (e.g. credits/api.py):

    # credits/api.py
    from incidents.api.permissions import StaffOnly
    from incidents.api.views import APIMixin

    class CustomerViewSet(APIMixin, viewsets.ModelViewSet):
        permission_classes = [StaffOnly]
        ...

    def register(router):
        router.register("customers", CustomerViewSet, basename="customer")

and call `register(router)` in the marked block of `incidents/api/urls.py`. `APIMixin`
gives the shared policies (token auth, throttles, JSON only, the error body and
pagination); `StaffOnly` answers 401 without a token and 403 for non-staff. Use
`incidents.api.views.errors(...)` in `extend_schema` to document the error responses.
"""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from incidents.api.views import APIRoot


class V1Router(DefaultRouter):
    APIRootView = APIRoot


def build_router() -> V1Router:
    from incidents.api import views

    router = V1Router()
    router.register("products", views.ProductViewSet, basename="product")
    router.register("locations", views.LocationViewSet, basename="location")
    router.register("incidents", views.IncidentViewSet, basename="incident")
    router.register("maintenance", views.MaintenanceViewSet, basename="maintenance")
    router.register("action-items", views.ActionItemViewSet, basename="action-item")
    return router
