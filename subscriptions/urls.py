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
    path("maintenance.ics", views.maintenance_ics, name="maintenance_ics"),
    path("staff/action-items/", views.staff_action_items, name="staff_action_items"),
]
