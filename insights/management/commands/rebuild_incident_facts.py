from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from insights import facts


class Command(BaseCommand):
    help = (
        "Recompute the insights page's stored figures (every incident's facts, every "
        "product's impact stretches, the per-scope rows and month sums, each product's "
        "downtime per month) from the incidents, windows and updates. The write "
        "services keep them fresh; run this after writing history around them (bulk loads, "
        "SQL fixes, restores, a change of DISPLAY_TIME_ZONE). One transaction; progress "
        "every 2,000 incidents."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        incidents, products = facts.facts_rebuild(progress=lambda line: self.stdout.write(f"  {line}"))
        self.stdout.write(
            self.style.SUCCESS(f"Rebuilt the facts of {incidents:,} incidents and {products:,} products.")
        )
