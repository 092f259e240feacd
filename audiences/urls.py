"""/p/<slug>/: the audience pages (mounted in every language by statuspage.urls), and
their v2 JSON at one address each (`json_urlpatterns`)."""

from __future__ import annotations

from django.urls import URLPattern, path

from audiences import views

app_name = "audiences"

urlpatterns: list[URLPattern] = [
    path("p/<slug:slug>/", views.page_detail, name="page"),
    path("p/<slug:slug>/incidents/<str:public_id>/", views.incident_detail, name="incident"),
]

json_urlpatterns: list[URLPattern] = [
    path("p/<slug:slug>/api/v2/summary.json", views.summary, name="v2-summary"),
    path("p/<slug:slug>/api/v2/status.json", views.status, name="v2-status"),
    path("p/<slug:slug>/api/v2/components.json", views.components, name="v2-components"),
    path("p/<slug:slug>/api/v2/incidents.json", views.incidents, name="v2-incidents"),
]
