from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from incidents import services
from incidents.models import Incident


class Command(BaseCommand):
    help = (
        "Publish an incident's approved report, as the approver named by --as, through the "
        "same service as the console and the API: a report that is not approved, or whose "
        "author is that approver, is refused and nothing changes "
        "(docs/adr/0021-report-review.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("incident", help="The incident's public id.")
        parser.add_argument("--as", dest="username", required=True, help="The approver who publishes it.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            incident = Incident.objects.get(public_id=options["incident"])
        except Incident.DoesNotExist:
            raise CommandError(f"No incident {options['incident']!r}.") from None
        try:
            actor = get_user_model().objects.get(username=options["username"], is_active=True)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No active user {options['username']!r}.") from None
        try:
            report = services.report_publish(incident=incident, actor=actor)  # type: ignore[arg-type]
        except (ValidationError, PermissionDenied) as refused:
            messages = refused.messages if isinstance(refused, ValidationError) else [str(refused)]
            raise CommandError("Not published: " + " ".join(messages)) from None
        self.stdout.write(
            f"Published the report of {incident.public_id} at {report.published_at:%Y-%m-%d %H:%M %Z}."
        )
