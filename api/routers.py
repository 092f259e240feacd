"""The v1 router. Other apps register their staff-only viewsets here.

How to add a resource (e.g. api/credits.py):

    # api/credits.py
    from api.permissions import StaffOnly
    from api.views import APIMixin

    class CustomerViewSet(APIMixin, viewsets.ModelViewSet):
        permission_classes = [StaffOnly]
        ...

    def register(router):
        router.register("customers", CustomerViewSet, basename="customer")

and call `register(router)` in the marked block of `api/urls.py`. `APIMixin`
gives the shared policies (token auth, throttles, JSON only, the error body and
pagination); `StaffOnly` answers 401 without a token and 403 for non-staff. Use
`api.views.errors(...)` in `extend_schema` to document the error responses.
"""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from api.views import APIRoot


class V1Router(DefaultRouter):
    APIRootView = APIRoot


def build_router() -> V1Router:
    from api import views

    router = V1Router()
    router.register("products", views.ProductViewSet, basename="product")
    router.register("locations", views.LocationViewSet, basename="location")
    router.register("incidents", views.IncidentViewSet, basename="incident")
    router.register("maintenance", views.MaintenanceViewSet, basename="maintenance")
    router.register("action-items", views.ActionItemViewSet, basename="action-item")
    return router
