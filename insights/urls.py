from __future__ import annotations

from django.urls import URLPattern, path

from insights import views

app_name = "insights"

urlpatterns: list[URLPattern] = [
    path("", views.insights, name="index"),
    path("<slug:name>.csv", views.insights_csv, name="csv"),
]
