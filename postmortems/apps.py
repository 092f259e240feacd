from __future__ import annotations

from django.apps import AppConfig


class PostmortemsConfig(AppConfig):
    name = "postmortems"
    verbose_name = "Postmortems: timelines, review, contributing factors, follow-through"

    def ready(self) -> None:
        from incidents.action_item_events import action_item_event_subscribe
        from postmortems.follow import action_item_changes_record

        action_item_event_subscribe("postmortems.follow", action_item_changes_record)
