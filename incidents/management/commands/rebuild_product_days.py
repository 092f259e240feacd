from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from core.timezones import display_zone
from incidents import daily


class Command(BaseCommand):
    help = (
        "Recount the per-day summary the status page reads (each product's impact per day "
        "of the display zone) from every impact window. The services keep it up to date; "
        "run this after changing DISPLAY_TIME_ZONE (days begin at another midnight) or "
        "after writing windows behind the services' back (bulk loads). One transaction: "
        "the page reads the old summary until the new one is complete."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        zone = settings.DISPLAY_TIME_ZONE

        def progress(products: int, rows: int) -> None:
            if products % 100 == 0:
                self.stdout.write(f"  {products} products, {rows} days with impact")

        with transaction.atomic():
            rows = daily.rebuild(daily.Models(), tz=display_zone(), zone=zone, progress=progress)
        self.stdout.write(f"{rows} days with impact counted in {zone}")
