"""A stale answer (an older copy served while the fresh one cannot be built) and the
error raised when there is none."""

from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpResponseBase

SNAPSHOT_HEADER = "X-Status-Snapshot"


class Unavailable(Exception):
    """A public read that cannot be answered in time and has no older copy: the caller
    gets 503 + Retry-After (DatabaseUnavailableMiddleware), without a traceback."""

    def __init__(
        self, *, retry_after: int, message: str = "This page is being refreshed. Please retry shortly."
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.message = message


def stale_etag(etag: str) -> str:
    """A weak validator of its own: a stale copy must never revalidate as the fresh page."""
    inner = etag.removeprefix("W/").strip('"')
    return f'W/"{inner}-stale"'


def mark_stale(response: HttpResponseBase, *, built_at: float) -> None:
    age = max(0, int(time.time() - built_at))
    response["Age"] = str(age)
    response[SNAPSHOT_HEADER] = "stale"
    response["X-Snapshot-Age"] = str(age)
    # Short: a shared cache (nginx, a CDN) must come back for the fresh page soon.
    response["Cache-Control"] = f"public, max-age={settings.PUBLIC_STALE_MAX_AGE}"
