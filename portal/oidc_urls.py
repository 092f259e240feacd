"""OpenID Connect sign-in: one address in every language, since a provider knows the
callback by its exact URL."""

from __future__ import annotations

from django.urls import URLPattern, path

from portal import oidc

app_name = "portal_oidc"

urlpatterns: list[URLPattern] = [
    path("<int:pk>/start/", oidc.Start.as_view(), name="start"),
    path("callback/", oidc.Callback.as_view(), name="callback"),
]
