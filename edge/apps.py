from __future__ import annotations

from django.apps import AppConfig


class EdgeConfig(AppConfig):
    name = "edge"
    verbose_name = "Edge: caching and resilience"
