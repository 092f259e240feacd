from __future__ import annotations

from django.apps import AppConfig


class CreditsConfig(AppConfig):
    name = "credits"
    verbose_name = "SLA credits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Workers import apps, not views: the outbox handler must be registered here.
        from credits import services

        services.register_outbox_handlers()
