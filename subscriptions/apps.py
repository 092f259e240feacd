from __future__ import annotations

from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    name = "subscriptions"
    verbose_name = "Subscriptions and notifications"

    def ready(self) -> None:
        # Webhook outcomes feed the failure counter; the handler registry lives in the
        # outbox, so it must be filled in every process that runs deliveries.
        from incidents import events
        from subscriptions import components, notifications, webhooks

        webhooks.register_outbox_handlers()
        # Incident changes reach subscribers through the domain's event registry.
        events.incident_event_subscribe("subscriptions", notifications.on_incident_event)
        # Component levels that moved: Statuspage-format component_update webhooks.
        events.incident_event_subscribe("subscriptions.components", components.on_incident_event)
