"""`manage.py load_demo`: the demo data `make run` loads on every start."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from demo import alerts as alerts_demo
from demo import audiences as audiences_demo
from demo import credits as credits_demo
from demo import incidents as demo
from demo import portal as portal_demo
from demo import postmortem_follow
from demo import postmortem_timeline as timeline_demo
from demo import templates as templates_demo
from demo import upstream as upstream_demo


class Command(BaseCommand):
    help = (
        "Load demo data: a staff login (staff / staff-demo), Google Workspace and Google "
        "Cloud products, regions and zones, three incidents retold from published incident "
        "reports, a few recent small incidents and an upcoming maintenance, SLA customers, message "
        "templates, an Alertmanager integration to fire a test alert at, two recorded upstream "
        "providers and a dependency (Gmail on Cloud Storage in us-central1). Idempotent: "
        "whatever already exists is left exactly as it is, so running it again changes nothing."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        # A thin sequence of loaders; other apps append theirs (e.g. SLA customers) here.
        summary = demo.load(stdout=self.stdout)
        credits = credits_demo.load(stdout=self.stdout)
        templates = templates_demo.load(stdout=self.stdout)
        alerts = alerts_demo.load(stdout=self.stdout)
        timeline = timeline_demo.load(stdout=self.stdout)
        follow = postmortem_follow.load(stdout=self.stdout)
        pages = audiences_demo.load(stdout=self.stdout)
        portal_added = portal_demo.load()
        upstream = upstream_demo.load(stdout=self.stdout)
        others = (
            credits.policies_created,
            credits.customers_created,
            templates.templates_created,
            timeline.entries_created,
            timeline.links_created,
            follow.items_retold or follow.items_created,
            pages.pages_created,
            portal_added,
            upstream.providers_created,
            upstream.dependencies_created,
        )
        if summary.created_anything or any(others) or alerts.integrations_created:
            self.stdout.write(
                self.style.SUCCESS(f"Demo data loaded ({len(summary.incidents_created)} incidents created).")
            )
        else:
            self.stdout.write(self.style.SUCCESS("Demo data already present; nothing changed."))
        pages_hint = audiences_demo.sign_in_hint()
        if pages_hint:
            self.stdout.write(pages_hint)
        # The test alert's command stays the last line (tests and the README read it there).
        hint = alerts_demo.test_alert_hint()
        if hint:
            self.stdout.write(hint)
