from __future__ import annotations

from django.apps import AppConfig


class EdgeConfig(AppConfig):
    name = "edge"
    verbose_name = "Edge: caching and resilience"

    def ready(self) -> None:
        # The client-side bound on every PostgreSQL round trip (see edge/deadline.py).
        from edge.deadline import install_client_timeout

        install_client_timeout()
