from __future__ import annotations

from django.apps import AppConfig


class InsightsConfig(AppConfig):
    name = "insights"
    verbose_name = "Reliability insights and uptime reports"

    def ready(self) -> None:
        from incidents import events
        from insights import facts

        # Every write service announces its change inside its transaction; the facts
        # follow in the same transaction (docs/adr/0018-incident-facts.md).
        events.incident_event_subscribe("insights", facts.on_incident_event)
        events.regrouped_subscribe("insights", facts.on_regrouped)
