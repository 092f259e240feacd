from __future__ import annotations

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Customer portal"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Page subscribers hear incident events, maintenance reminders and the resume
        # sweep through the lower rooms' registries (docs/adr/0034-page-subscribers.md).
        from incidents import events
        from outbox.services import outbox_register_handler
        from portal import page_notifications, page_subscriptions
        from subscriptions import maintenance, notifications

        events.incident_event_subscribe("portal.pages", page_notifications.on_incident_event)
        maintenance.reminder_subscribe("portal.pages", page_notifications.maintenance_reminder)
        notifications.resume_subscribe("portal.pages", page_notifications.page_events_resume)
        outbox_register_handler(
            page_notifications.WEBHOOK_PURPOSE, on_failed=page_subscriptions.page_webhook_failed
        )
