"""Celery wiring: settings come from Django's (CELERY_*), tasks from every app."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "statuspage.settings")

app = Celery("statuspage")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
def drop_broken_connections(task: Any = None, **_kwargs: Any) -> None:
    """Before each task, close a database connection that failed and no longer answers.

    CELERY_DB_REUSE_MAX keeps connections across tasks, and Celery's fixup checks them
    only every 2 x that many tasks: after a database restart each pool process failed up
    to 200 tasks on its dead connection ("connection already closed"), found by the chaos
    soak (bench/soak). A connection that saw no error costs nothing here; one that did is
    pinged once (Django's own check) and replaced if dead.
    """
    from django.db import connections

    # An eager task runs inside its caller (a request, a test), maybe in its transaction.
    if task is not None and getattr(task.request, "is_eager", False):
        return
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and conn.errors_occurred and not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()
