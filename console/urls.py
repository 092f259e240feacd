from django.urls import path

from console import (
    credit_views,
    edit_views,
    reconcile_views,
    report_exports,
    report_views,
    review_views,
    timeline_views,
    update_views,
    views,
)

app_name = "console"

urlpatterns = [
    path("", views.now, name="now"),
    path("declare/", views.declare, name="declare"),
    path("incidents/<str:public_id>/", views.incident, name="incident"),
    path("incidents/<str:public_id>/update/", update_views.update, name="update"),
    path(
        "incidents/<str:public_id>/updates/<int:update_id>/edit/",
        update_views.update_edit,
        name="update_edit",
    ),
    path("incidents/<str:public_id>/publish/", views.publish_draft, name="publish"),
    path("incidents/<str:public_id>/edit/", edit_views.incident_edit, name="incident_edit"),
    path("incidents/<str:public_id>/report/", report_views.report, name="report"),
    path("incidents/<str:public_id>/report/timeline/", timeline_views.timeline, name="timeline"),
    path("incidents/<str:public_id>/report/review/", review_views.report_review, name="report_review"),
    path("incidents/<str:public_id>/report/factors/", review_views.report_factors, name="report_factors"),
    path("report-templates/", review_views.report_templates, name="report_templates"),
    path("report-templates/new/", review_views.report_template_edit, name="report_template_new"),
    path("report-templates/<int:pk>/", review_views.report_template_edit, name="report_template_edit"),
    path("incidents/<str:public_id>/report/print/", report_exports.report_print, name="report-print"),
    path("incidents/<str:public_id>/report.md", report_exports.report_markdown, name="report-markdown"),
    path("incidents/<str:public_id>/report.pdf", report_exports.report_pdf_view, name="report-pdf"),
    path("templates/", views.templates, name="templates"),
    path("templates/new/", views.template_edit, name="template_new"),
    path("templates/<int:pk>/", views.template_edit, name="template_edit"),
    path("templates/<int:pk>/delete/", views.template_delete, name="template_delete"),
    path("preview/", views.preview, name="preview"),
    path("credits/", credit_views.credits_review, name="credits"),
    path("credits/compute/", credit_views.credits_compute, name="credits_compute"),
    path("credits/confirm/", credit_views.credits_confirm, name="credits_confirm"),
    path("credits/send/", credit_views.credits_send, name="credits_send"),
    path("credits/export.csv", credit_views.credits_export, name="credits_export"),
    path("credits/<int:pk>/", credit_views.credit_notice, name="credit_notice"),
    path(
        "credits/reconcile/<int:pk>/",
        reconcile_views.incident_reconciliation,
        name="incident_reconciliation",
    ),
    path("credits/<int:pk>/letter/", credit_views.credit_letter, name="credit_letter"),
    path("credits/<int:pk>/letter.html", credit_views.credit_letter_html, name="credit_letter_html"),
    path("credits/<int:pk>/cancel/", credit_views.credit_cancel, name="credit_cancel"),
    path("customers/<int:pk>/statement/", credit_views.customer_statement, name="customer_statement"),
]
