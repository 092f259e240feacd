"""The public pages, in every language (statuspage.urls mounts them through
i18n_patterns: English at the bare paths, French under /fr/). The machine-readable
outputs beside them (feeds, badges, the live version document, CSV) are in
public_site.feed_urls and have one address each, whatever the reader's language."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from public_site import exports, views

app_name = "public"

urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.status_index_entry, name="index"),
    path("incidents/<str:public_id>/", views.incident_detail, name="incident"),
    path("incidents/<str:public_id>/report/print/", exports.report_print, name="report-print"),
    path("incidents/<str:public_id>/report.md", exports.report_markdown, name="report-markdown"),
    path("incidents/<str:public_id>/report.pdf", exports.report_pdf_view, name="report-pdf"),
    path("products/<slug:slug>/", views.product_detail, name="product"),
    path("products/<slug:slug>/uptime/", views.product_uptime, name="product-uptime"),
    path("history/", views.history, name="history"),
]
