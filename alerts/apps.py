from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Alert intake: vendor webhooks turned into draft incidents with a human in the loop."""

    name = "alerts"
    verbose_name = "Alert intake"
    default_auto_field = "django.db.models.BigAutoField"
