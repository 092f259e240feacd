from __future__ import annotations

from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    name = "subscriptions"
    verbose_name = "Subscriptions and notifications"

    def ready(self) -> None:
        # Webhook outcomes feed the failure counter; the handler registry lives in the
        # outbox, so it must be filled in every process that runs deliveries.
        from subscriptions import webhooks

        webhooks.register_outbox_handlers()
