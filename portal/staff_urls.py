from __future__ import annotations

from django.urls import URLPattern, path

from portal import staff_views

app_name = "portal_staff"

urlpatterns: list[URLPattern] = [
    path("", staff_views.access, name="access"),
    path("<int:pk>/remove/", staff_views.access_remove, name="access_remove"),
    path("oidc/", staff_views.oidc_add, name="oidc_add"),
    path("oidc/<int:pk>/remove/", staff_views.oidc_remove, name="oidc_remove"),
]
