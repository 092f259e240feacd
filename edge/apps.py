from __future__ import annotations

from django.apps import AppConfig


class EdgeConfig(AppConfig):
    name = "edge"
    verbose_name = "Edge: caching and resilience"

    def ready(self) -> None:
        # The client-side bound on every PostgreSQL round trip (see edge/deadline.py).
        from edge.deadline import install_client_timeout

        install_client_timeout()

        # Pages rendered ahead of visitors after each public change (edge/prerender.py).
        from edge import prerender, version

        if prerender.public_state_bumped not in version.bumped:
            version.bumped.append(prerender.public_state_bumped)
