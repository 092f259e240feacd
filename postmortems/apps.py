from __future__ import annotations

from django.apps import AppConfig


class PostmortemsConfig(AppConfig):
    name = "postmortems"
    verbose_name = "Postmortems: timelines, review, contributing factors, follow-through"

    def ready(self) -> None:
        from incidents import events
        from incidents.action_item_events import action_item_event_subscribe
        from postmortems import review
        from postmortems.follow import action_item_changes_record

        # The review log hears of the transitions the incident room makes (approve,
        # send back, publish, revise), so every one is kept whichever door it came by.
        events.incident_event_subscribe("postmortems.review", review.on_incident_event)
        # Each action item's changes (status, due date, owner) are kept as its history.
        action_item_event_subscribe("postmortems.follow", action_item_changes_record)
