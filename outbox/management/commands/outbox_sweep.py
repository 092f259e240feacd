from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from outbox import services


class Command(BaseCommand):
    help = (
        "Re-enqueue outbox messages that are due or whose delivery lease expired, and fail "
        "those that exhausted their attempts. Beat runs this every minute; run it by hand "
        "in the embedded mode (no worker) to deliver retries that came due."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = services.outbox_sweep()
        self.stdout.write(
            f"requeued {result.requeued} due, reclaimed {result.reclaimed} expired, failed {result.failed}"
        )
