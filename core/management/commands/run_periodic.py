"""`manage.py run_periodic`: the beat schedule, run in process, for the embedded mode.

In production Celery beat sends the entries of CELERY_BEAT_SCHEDULE to the workers. The
embedded default has neither Redis nor a worker, so `make run` starts this command next
to the web server: it runs each due task in this process (the outbox sweeper, the
maintenance transitions, the action-item reminders) on the same schedule.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from celery import current_app as app
from celery.schedules import BaseSchedule, schedule
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections
from django.utils import timezone


def as_schedule(value: Any) -> BaseSchedule:
    if isinstance(value, BaseSchedule):
        return value
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return schedule(timedelta(seconds=seconds))


class Command(BaseCommand):
    help = (
        "Run the periodic tasks of CELERY_BEAT_SCHEDULE in this process, each when it is due "
        "(for the embedded mode without Redis, where no Celery beat or worker runs). "
        "--once runs every task once and exits."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Run every task once, then exit.")
        parser.add_argument("--tick", type=float, default=5.0, help="Seconds between checks (default 5).")

    def handle(self, *args: Any, **options: Any) -> None:
        # The project's app (statuspage/__init__.py makes it current when Django loads),
        # reached without importing the project shell from a room.
        app.loader.import_default_modules()  # registers the tasks of every app
        entries = {
            name: (entry["task"], as_schedule(entry["schedule"]))
            for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
        }
        last_run: dict[str, datetime] = {}
        self.stdout.write(f"periodic tasks: {', '.join(sorted(entries)) or 'none'}")
        while True:
            for name, (task_name, sched) in entries.items():
                previous = last_run.get(name)
                due = previous is None or sched.is_due(previous).is_due
                if not due:
                    continue
                last_run[name] = timezone.now()
                result = app.tasks[task_name].apply()
                outcome = "failed" if result.failed() else "ok"
                self.stdout.write(f"{timezone.now():%H:%M:%S} {name}: {outcome}")
            if options["once"]:
                return
            # A long-running process: drop connections past CONN_MAX_AGE or broken, as
            # Django does around each request.
            close_old_connections()
            time.sleep(options["tick"])
