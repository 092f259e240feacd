from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path("", views.now, name="now"),
    path("declare/", views.declare, name="declare"),
    path("incidents/<str:public_id>/", views.incident, name="incident"),
    path("incidents/<str:public_id>/update/", views.update, name="update"),
    path("incidents/<str:public_id>/publish/", views.publish_draft, name="publish"),
    path("incidents/<str:public_id>/report/", views.report, name="report"),
    path("templates/", views.templates, name="templates"),
    path("templates/new/", views.template_edit, name="template_new"),
    path("templates/<int:pk>/", views.template_edit, name="template_edit"),
    path("templates/<int:pk>/delete/", views.template_delete, name="template_delete"),
    path("preview/", views.preview, name="preview"),
]
