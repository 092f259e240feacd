from __future__ import annotations

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "outbox"
    verbose_name = "Outbox (emails and webhooks)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the settings checks (retry cap vs. broker visibility timeout).
        from outbox import checks  # noqa: F401
