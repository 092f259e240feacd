from __future__ import annotations

from django.apps import AppConfig


class UpstreamConfig(AppConfig):
    """Third-party status pages we read, and what our products depend on."""

    name = "upstream"
    verbose_name = "Upstream providers and dependencies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from incidents.events import incident_event_subscribe
        from upstream import dependencies

        incident_event_subscribe("upstream.dependencies", dependencies.on_incident_event)
