from __future__ import annotations

import importlib
from typing import Any

from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


def _seed_report_templates(**kwargs: Any) -> None:
    """The two default report templates exist whenever the table is empty: after the
    first migration (which seeds them too) and after a flush (tests), as the roles do."""
    registry = kwargs.get("apps") or apps
    try:
        template = registry.get_model("postmortems", "ReportTemplate")
    except LookupError:  # migrated to a state before the templates existed
        return
    if not template.objects.exists():
        importlib.import_module("postmortems.migrations.0003_review").seed_templates(registry, None)


class PostmortemsConfig(AppConfig):
    name = "postmortems"
    verbose_name = "Postmortems: timelines, review, contributing factors, follow-through"

    def ready(self) -> None:
        post_migrate.connect(_seed_report_templates, sender=self)
        from incidents import events
        from incidents.action_item_events import action_item_event_subscribe
        from postmortems import review
        from postmortems.follow import action_item_changes_record

        # The review log hears of the transitions the incident room makes (approve,
        # send back, publish, revise), so every one is kept whichever door it came by.
        events.incident_event_subscribe("postmortems.review", review.on_incident_event)
        # Each action item's changes (status, due date, owner) are kept as its history.
        action_item_event_subscribe("postmortems.follow", action_item_changes_record)
