"""Public pages rendered into the page cache ahead of visitors: after a deploy
(`manage.py prerender_pages`) and after each public change (a task on the periodic
queue, or a thread of this process in the embedded mode). The pages come from the rooms
above, which register a source of paths in `ready()`, first the pages to have first.
Design: docs/adr/0017-prerender.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from io import BytesIO
from urllib.parse import urlsplit

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.db import connections
from django.urls import Resolver404, resolve
from django.utils import translation

from edge.deadline import must_stay_in_thread
from edge.i18n import language_of_path
from edge.page_cache import Prerendered
from edge.version import public_state_version

logger = logging.getLogger(__name__)

Source = Callable[[], Iterable[str]]
_sources: list[Source] = []


def register(source: Source) -> None:
    """A room's paths to prerender, in the order they should be ready (idempotent)."""
    if source not in _sources:
        _sources.append(source)


def paths() -> list[str]:
    return [path for source in _sources for path in source()]


@dataclass
class Report:
    counts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    stopped: bool = False  # the public state changed again: a newer run does the rest
    seconds: float = 0.0

    def count(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1


def _request(path: str) -> WSGIRequest:
    """A plain anonymous GET of `path` on SITE_URL, as a visitor's would be."""
    site = urlsplit(settings.SITE_URL)
    https = site.scheme == "https"
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": site.hostname or "localhost",
        "SERVER_PORT": str(site.port or (443 if https else 80)),
        "HTTP_HOST": site.netloc or "localhost",
        "wsgi.url_scheme": site.scheme or "http",
        "wsgi.input": BytesIO(),
    }
    return WSGIRequest(environ)


def prerender_path(path: str) -> Prerendered | None:
    """Render one public page into the cache; None when its view is not a cached page."""
    language = language_of_path(path)
    with translation.override(language):
        try:
            match = resolve(path)
        except Resolver404:
            return None
        render = getattr(match.func, "prerender", None)
        if render is None:
            return None
        request = _request(path)
        request.resolver_match = match
        request.LANGUAGE_CODE = language  # type: ignore[attr-defined]
        outcome: Prerendered = render(request, *match.args, **match.kwargs)
        return outcome


def prerender_all(
    *, version: str | None = None, progress: Callable[[str, str], None] | None = None
) -> Report:
    """Render every registered page that is not in the cache yet. With `version`, stop
    as soon as the public state is no longer that one (a newer run follows)."""
    report = Report()
    started = time.monotonic()
    for path in paths():
        if version is not None and public_state_version() != version:
            report.stopped = True
            break
        try:
            outcome = prerender_path(path)
        except Exception:  # one page must not stop the others; its first visitor renders it
            logger.warning("could not prerender %s", path, exc_info=True)
            report.failed.append(path)
            continue
        name = outcome.value if outcome is not None else "skipped"
        report.count(name)
        if progress is not None:
            progress(path, name)
    report.seconds = time.monotonic() - started
    return report


# --- After each public change ----------------------------------------------------------------

_wanted: str | None = None  # the newest version a run was asked for, in this process
_wanted_lock = threading.Lock()
_runner: threading.Thread | None = None


def _run_wanted() -> None:
    """The process's one prerender thread: runs for the newest version asked for until
    no newer one was asked for meanwhile."""
    global _runner
    done: str | None = None
    try:
        while True:
            with _wanted_lock:
                version = _wanted
                if version is None or version == done:
                    _runner = None
                    return
            prerender_all(version=version)
            done = version
    finally:
        connections.close_all()


def public_state_bumped(version: str) -> None:
    """After a public write committed and bumped the stamp: prerender in the background.

    With a Celery worker, a task on the periodic queue (one per change; a run whose
    version is no longer current stops at once). Without one (the embedded mode), a
    thread of this process: the page cache is this process's own there anyway.
    """
    if not settings.PUBLIC_PRERENDER_ON_CHANGE:
        return
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        from edge.tasks import prerender_pages

        try:
            prerender_pages.delay(version)
        except Exception:  # noqa: BLE001 - the broker is away: visitors render on first request
            logger.warning("could not queue the prerender of version %s", version)
        return
    if must_stay_in_thread():
        # Inside a transaction (tests) another thread would not see its rows.
        prerender_all(version=version)
        return
    global _wanted, _runner
    with _wanted_lock:
        _wanted = version
        if _runner is None:
            _runner = threading.Thread(target=_run_wanted, name="prerender", daemon=True)
            _runner.start()
