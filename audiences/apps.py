from __future__ import annotations

from django.apps import AppConfig


class AudiencesConfig(AppConfig):
    name = "audiences"
    verbose_name = "Pages for every audience"
