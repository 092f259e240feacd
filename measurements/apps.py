from __future__ import annotations

from django.apps import AppConfig


class MeasurementsConfig(AppConfig):
    name = "measurements"
    verbose_name = "Measurements (SLI sources)"
    default_auto_field = "django.db.models.BigAutoField"
