"""`manage.py prerender_pages`: render the public pages and badges into the page cache
(and `/` into its snapshot on disk) before visitors ask, after a deploy. Design:
docs/adr/0017-prerender.md."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from edge.prerender import prerender_all

PROGRESS_EVERY = 100


class Command(BaseCommand):
    help = (
        "Render `/`, the badges and each product page, in every language, into the page "
        "cache before visitors ask (docker compose runs it after migrate). Pages already "
        "cached under the current public state are left as they are. Needs a shared page "
        "cache (REDIS_URL or PAGE_CACHE_URL) to help the web processes; without one only "
        "the snapshots on disk outlive this command."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        verbose = int(options.get("verbosity", 1)) >= 2
        if settings.PUBLIC_PAGE_CACHE_ALIAS == "default" and not settings.REDIS_URL:
            self.stderr.write("The page cache is this process's own (no REDIS_URL): only snapshots are kept.")

        done = [0]

        def progress(path: str, outcome: str) -> None:
            done[0] += 1
            if verbose:
                self.stdout.write(f"{outcome:>8}  {path}")
            elif done[0] % PROGRESS_EVERY == 0:
                self.stdout.write(f"{done[0]} pages...")

        report = prerender_all(progress=progress)
        counts = ", ".join(f"{n} {name}" for name, n in sorted(report.counts.items())) or "no pages"
        self.stdout.write(f"Prerendered in {report.seconds:.1f} s: {counts}.")
        for path in report.failed:
            self.stderr.write(f"could not render {path} (see the log); its first visitor will.")
