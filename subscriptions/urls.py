"""The subscription pages, in every language (mounted through i18n_patterns). The
maintenance calendar and the staff list of action items have one address each:
subscriptions.extra_urls."""

from __future__ import annotations

from django.urls import path

from subscriptions import views

app_name = "subscriptions"

urlpatterns = [
    path("subscribe/", views.subscribe, name="subscribe"),
    path("subscribe/sent/", views.subscribe_sent, name="subscribe_sent"),
    path("subscribe/confirm/<str:token>/", views.confirm, name="confirm"),
    path("subscriptions/manage/<str:token>/", views.manage, name="manage"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
]
