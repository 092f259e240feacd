from __future__ import annotations

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Customer portal"
    default_auto_field = "django.db.models.BigAutoField"
