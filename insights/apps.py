from __future__ import annotations

from django.apps import AppConfig


class InsightsConfig(AppConfig):
    name = "insights"
    verbose_name = "Reliability insights and uptime reports"
