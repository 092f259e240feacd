"""The customer portal, in every language (mounted through i18n_patterns)."""

from __future__ import annotations

from django.urls import URLPattern, path

from portal import page_views, views

app_name = "portal"

urlpatterns: list[URLPattern] = [
    path("portal/", views.index, name="home"),
    path("portal/login/", views.login, name="login"),
    path("portal/logout/", views.logout, name="logout"),
    path("portal/signin/<str:token>/", views.redeem, name="redeem"),
    path("portal/statements/<str:period>/", views.statement, name="statement"),
    path("portal/pages/<slug:slug>/subscribe/", page_views.page_subscribe, name="page-subscribe"),
    path("portal/pages/unsubscribe/<str:token>/", page_views.page_unsubscribe, name="page-unsubscribe"),
]
