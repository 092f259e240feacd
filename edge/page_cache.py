"""Cached public reads that survive a herd, a cache outage and a database outage.

`public_page` wraps a view that renders public data the same for everyone (the status
page, the Statuspage-compatible JSON, the feeds):

- Entries are keyed by the public-state version stamp (edge.version), so a write is
  visible on the next request; a short TTL only refreshes clock-driven text (durations
  of ongoing incidents, "today" in the grid).
- At most one rebuild per key runs at a time across all processes: the first request
  takes a lock in the shared cache; the others get the previous render at once, marked
  stale (a page never rendered before waits for the first build, within its budget),
  instead of piling onto the database.
- Every good render of the pages named in SNAPSHOT_NAMES is also written to disk. With
  the database down or too slow, those pages answer 200 from the snapshot, marked stale
  with its age; nginx serves the same files when the app itself is down.
- The cache may be Redis and Redis may be down or paused: every cache call is guarded
  (edge.guard, edge.cache_backend), and a per-process memo keeps the page cheap.
- Every rebuild has a time budget (PUBLIC_RENDER_BUDGET). It runs in a thread of its
  own; past the budget the request answers the last good render or the snapshot, marked
  stale, or 503 + Retry-After, and the rebuild finishes in the background, once.
- Misses are shed: a process rebuilds at most PUBLIC_MAX_REBUILDS pages at once; hits
  are always served. After a database failure every page backs off together.
- Every page is cached per language (the path names it: edge.i18n); a French page has
  keys, a last good copy and a snapshot of its own, so an English reader can never be
  handed a French page, fresh or stale, nor the other way round.
- Only known query parameters with valid values make variants: each one has a
  normaliser that returns its canonical value, None (the canonical page) or raises
  Http404, and the view sees only the normalised query, so the key is what is rendered.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import wraps
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.utils import translation
from django.utils.http import http_date, quote_etag, urlencode
from django.utils.translation import gettext as _

from edge import guard
from edge.deadline import run_with_budget
from edge.http import PUBLIC_CACHE_CONTROL, is_not_modified
from edge.middleware import service_unavailable
from edge.models import RenderProblem
from edge.render_problems import render_problem_clear, render_problem_record
from edge.version import public_state_version

logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]
# A query parameter's normaliser: its canonical value, None for "as if absent", or
# Http404 for a value that names nothing.
Normaliser = Callable[[str], str | None]

# Pages kept on disk for when the database is down, and their file names (nginx's
# docker/nginx.conf serves the same names).
SNAPSHOT_NAMES = {"index": "index.html", "api-v2-summary": "api-v2-summary.json"}
SNAPSHOT_MARKER = b"<!--snapshot-notice-->"
DB_DOWN_KEY = guard.DB_DOWN_KEY
LAST_GOOD_TTL = 86400


@dataclass(frozen=True)
class CachedPage:
    body: bytes
    content_type: str
    etag: str
    built_at: float

    @classmethod
    def from_response(cls, response: HttpResponse) -> CachedPage:
        body = response.content
        return cls(
            body=body,
            content_type=response.get("Content-Type", "text/html; charset=utf-8"),
            etag=quote_etag(hashlib.sha256(body).hexdigest()[:32]),
            built_at=time.time(),
        )


# --- Per-process memo in front of the shared cache ------------------------------------
# A hit would otherwise fetch and unpickle the whole body from the shared cache (a
# network round trip with Redis) on every request. Keys carry the version, so a memo
# entry can only be outdated by the clock, and it expires when the shared entry does.

_memo: dict[str, tuple[float, CachedPage]] = {}
MEMO_MAX_ENTRIES = 256


def _memo_get(key: str) -> CachedPage | None:
    hit = _memo.get(key)
    if hit is None or hit[0] <= time.time():
        return None
    return hit[1]


# The newest good render of each page variant seen by this process, whatever its
# version: what a stale answer falls back to when the shared cache is gone as well.
_memo_last: dict[str, CachedPage] = {}


def _memo_put(key: str, page: CachedPage) -> None:
    if len(_memo) >= MEMO_MAX_ENTRIES:
        # Oldest first; a racing thread may have removed it already.
        _memo.pop(next(iter(_memo), ""), None)
    _memo[key] = (page.built_at + settings.PUBLIC_CACHE_TTL, page)
    key_name = key.rsplit(":", 1)[0].removeprefix("page:")
    if len(_memo_last) >= MEMO_MAX_ENTRIES and key_name not in _memo_last:
        _memo_last.pop(next(iter(_memo_last), ""), None)
    previous = _memo_last.get(key_name)
    if previous is None or previous.built_at <= page.built_at:
        _memo_last[key_name] = page


# --- Snapshots on disk -------------------------------------------------------------------


def snapshot_dir() -> Path:
    return Path(settings.VAR_DIR) / "snapshots"


def language_variant(name: str, language: str) -> str:
    """The cache name of a page in a language: the name itself in the default language
    (so English keys and snapshot files are what they always were), `index@fr` else."""
    return name if language == settings.LANGUAGE_CODE else f"{name}@{language}"


def snapshot_filename(name: str) -> str | None:
    """'index' -> 'index.html', 'index@fr' -> 'index.fr.html' (docker/nginx.conf serves
    both names); None for pages that are not snapshotted."""
    base, _sep, language = name.partition("@")
    filename = SNAPSHOT_NAMES.get(base)
    if filename is None or not language:
        return filename
    stem, dot, suffix = filename.rpartition(".")
    return f"{stem}.{language}{dot}{suffix}"


def snapshot_write(name: str, page: CachedPage) -> None:
    filename = snapshot_filename(name)
    if filename is None:
        return
    directory = snapshot_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / filename
        meta = directory / f"{filename}.meta.json"
        # Write-then-rename, so a reader (this app or nginx) never sees half a file.
        tmp = target.with_suffix(target.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(page.body)
        os.replace(tmp, target)
        tmp_meta = meta.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp_meta.write_text(
            json.dumps({"built_at": page.built_at, "content_type": page.content_type, "etag": page.etag})
        )
        os.replace(tmp_meta, meta)
    except OSError:
        logger.warning("could not write snapshot %s", name, exc_info=True)


def snapshot_read(name: str) -> CachedPage | None:
    filename = snapshot_filename(name)
    if filename is None:
        return None
    directory = snapshot_dir()
    try:
        body = (directory / filename).read_bytes()
        meta = json.loads((directory / f"{filename}.meta.json").read_text())
    except (OSError, ValueError):
        return None
    return CachedPage(
        body=body, content_type=meta["content_type"], etag=meta["etag"], built_at=float(meta["built_at"])
    )


# --- HTTP ----------------------------------------------------------------------------------


def page_response(request: HttpRequest, page: CachedPage, *, stale: bool = False) -> HttpResponse:
    """The response for a cached page: conditional GET, caching headers, no cookies.

    A stale answer (older than the current public state) carries the stale header, the
    notice in HTML pages, a weak ETag of its own and a short max-age.
    """
    etag = guard.stale_etag(page.etag) if stale else page.etag
    if is_not_modified(request, etag, datetime.fromtimestamp(int(page.built_at), tz=UTC)):
        response = HttpResponse(status=304)
    else:
        body = page.body
        if stale and SNAPSHOT_MARKER in body:
            body = body.replace(SNAPSHOT_MARKER, _stale_notice(page).encode(), 1)
        response = HttpResponse(body if request.method != "HEAD" else b"", content_type=page.content_type)
        response["Content-Length"] = str(len(body))
    response["ETag"] = etag
    response["Last-Modified"] = http_date(page.built_at)
    if stale:
        guard.mark_stale(response, built_at=page.built_at)
    else:
        response["Cache-Control"] = PUBLIC_CACHE_CONTROL
    return response


def _stale_notice(page: CachedPage) -> str:
    built = datetime.fromtimestamp(page.built_at, tz=UTC)
    minutes = max(0, int((time.time() - page.built_at) // 60))
    when = f'<time datetime="{built.isoformat()}">{built:%Y-%m-%d %H:%M} UTC</time>'
    return (
        '<div class="snapshot-notice" role="status"><strong>'
        + _("Live data is temporarily unavailable.")
        + "</strong> "
        + _("This is a snapshot from %(when)s (%(minutes)s min old).") % {"when": when, "minutes": minutes}
        + "</div>"
    )


# --- The decorator --------------------------------------------------------------------------

# Rebuilds under way in this process, by key: a second miss waits for the first.
_inflight: dict[str, Future[CachedPage | HttpResponse | None]] = {}
_inflight_lock = threading.Lock()


def _build(view: View, request: HttpRequest, args: Any, kwargs: Any) -> HttpResponse:
    response = view(request, *args, **kwargs)
    render = getattr(response, "render", None)
    if callable(render):
        response = render()
    return response


def _previous(key_name: str, base_name: str) -> CachedPage | None:
    """The last good render of this variant, else the page's snapshot on disk."""
    # This process's own copy first: no round trip, nothing to unpickle, and under a
    # slow database this is what every stale answer costs.
    previous: CachedPage | None = _memo_last.get(key_name)
    if previous is None:
        previous = guard.cache_get(f"page:{key_name}:last", store=guard.pages_cache())
    if previous is None and key_name == base_name:
        previous = snapshot_read(base_name)
    return previous


def _wait_budget(key_name: str, base_name: str) -> float:
    """How long a miss waits for its rebuild: the budget, or the longer first-render
    budget when there is no older copy to answer with instead (a 503 is worse than a
    slower first view)."""
    budget = float(settings.PUBLIC_RENDER_BUDGET)
    first = float(settings.PUBLIC_FIRST_RENDER_BUDGET)
    if first > budget and _previous(key_name, base_name) is None:
        return first
    return budget


def _fallback(request: HttpRequest, key_name: str, base_name: str, *, retry_after: int) -> HttpResponse:
    """The last good render of this variant, else the page's snapshot, both marked stale;
    else 503 + Retry-After. Never touches the database."""
    previous = _previous(key_name, base_name)
    if previous is not None:
        return page_response(request, previous, stale=True)
    return service_unavailable(
        request, message=_("This page is being refreshed. Please retry shortly."), retry_after=retry_after
    )


def _normalised_query(request: HttpRequest, normalisers: Mapping[str, Normaliser]) -> list[tuple[str, str]]:
    query = []
    for param, normalise in normalisers.items():
        raw = request.GET.get(param)
        value = normalise(raw) if raw else None
        if value is not None:
            query.append((param, value))
    return query


def public_page(
    name: str | None = None, *, vary_on_query: Mapping[str, Normaliser] | None = None
) -> Callable[[View], View]:
    """Serve a view's public, user-independent output from the versioned cache.

    `name` is the cache (and snapshot) name. Only the query parameters named in
    `vary_on_query` make variants, each through its normaliser; the view is called with
    the normalised query only, so random or out-of-range values can neither fill the
    cache nor make a page render differently from its key.
    """
    normalisers = dict(vary_on_query or {})

    def decorator(view: View) -> View:
        page_name = name or f"{view.__module__}.{view.__qualname__}"

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            base_name = language_variant(page_name, translation.get_language() or settings.LANGUAGE_CODE)
            key_name = base_name
            if args or kwargs:
                key_name += (
                    ":" + hashlib.sha256(repr((args, sorted(kwargs.items()))).encode()).hexdigest()[:16]
                )
            query = _normalised_query(request, normalisers)  # may raise Http404
            request.GET = QueryDict(urlencode(query))
            if query:
                key_name += ":" + hashlib.sha256(repr(query).encode()).hexdigest()[:16]
            version = public_state_version()
            key = f"page:{key_name}:{version}"
            store = guard.pages_cache()
            page = _memo_get(key)
            if page is None:
                page = guard.cache_get(key, store=store)
                if page is not None:
                    _memo_put(key, page)
            if page is not None:
                return page_response(request, page)  # a hit: always served
            return _miss(request, view, args, kwargs, key=key, key_name=key_name, base_name=base_name)

        def _miss(
            request: HttpRequest,
            view: View,
            args: Any,
            kwargs: Any,
            *,
            key: str,
            key_name: str,
            base_name: str,
        ) -> HttpResponse:
            if guard.database_backing_off():
                # The database failed moments ago: no retry storm against a sick database.
                return _fallback(
                    request, key_name, base_name, retry_after=settings.DB_UNAVAILABLE_RETRY_AFTER
                )

            with _inflight_lock:
                running = _inflight.get(key)
                if running is None:
                    # Registered at once, so a miss that arrives meanwhile waits for it.
                    pending: Future[CachedPage | HttpResponse | None] = Future()
                    pending.set_running_or_notify_cancel()
                    _inflight[key] = pending
            if running is None:
                future, done = _start_rebuild(
                    request,
                    view,
                    args,
                    kwargs,
                    key=key,
                    key_name=key_name,
                    base_name=base_name,
                    pending=pending,
                )
            else:
                # A rebuild of this page is already under way here: answer the older copy
                # at once rather than wait for it again (it may be past its budget already).
                previous = _previous(key_name, base_name)
                if previous is not None:
                    return page_response(request, previous, stale=True)
                future = running
                budget = _wait_budget(key_name, base_name)
                try:
                    future.exception(timeout=budget if budget > 0 else None)
                    done = True
                except TimeoutError:
                    done = False
            if not done:
                # Over budget: answer now; the rebuild goes on and leaves its result cached.
                return _fallback(request, key_name, base_name, retry_after=settings.SHED_RETRY_AFTER)
            try:
                outcome = future.result()
            except DatabaseError:
                fallback = _fallback(
                    request, key_name, base_name, retry_after=settings.DB_UNAVAILABLE_RETRY_AFTER
                )
                if fallback.status_code == 503:
                    raise  # DatabaseUnavailableMiddleware answers 503 + Retry-After
                return fallback
            except Exception as exc:
                if isinstance(exc, Http404 | PermissionDenied | guard.Unavailable):
                    raise
                # One entry that cannot be rendered must not take the page down: serve the
                # last good copy, marked stale, and tell staff (the log, and a render
                # problem on the console's Now page until the page renders again).
                logger.exception("could not render %s; serving the last good copy", key_name)
                render_problem_record(
                    kind=RenderProblem.Kind.PAGE, key=key_name, label=request.get_full_path(), error=exc
                )
                previous = _previous(key_name, base_name)
                if previous is None:
                    raise
                return page_response(request, previous, stale=True)
            if outcome is None:
                # Not rebuilt here (shed, or rebuilt by another process meanwhile).
                return _fallback(request, key_name, base_name, retry_after=settings.SHED_RETRY_AFTER)
            if isinstance(outcome, CachedPage):
                return page_response(request, outcome)
            if outcome.status_code == 503:
                return _fallback(
                    request, key_name, base_name, retry_after=settings.DB_UNAVAILABLE_RETRY_AFTER
                )
            return outcome

        wrapped.shed_exempt = True  # type: ignore[attr-defined]
        return wrapped

    return decorator


def _start_rebuild(
    request: HttpRequest,
    view: View,
    args: Any,
    kwargs: Any,
    *,
    key: str,
    key_name: str,
    base_name: str,
    pending: Future[CachedPage | HttpResponse | None],
) -> tuple[Future[CachedPage | HttpResponse | None], bool]:
    """Take the cross-process lock and a rebuild slot, start the rebuild within the budget.
    Returns the future that `pending` (what other threads of this process wait on) follows."""
    budget = _wait_budget(key_name, base_name)

    def settle(result: CachedPage | HttpResponse | None = None, exc: BaseException | None = None) -> None:
        with _inflight_lock:
            if _inflight.get(key) is pending:
                del _inflight[key]
        if exc is not None:
            pending.set_exception(exc)
        else:
            pending.set_result(result)

    lock_key = f"lock:{key}"
    locked = guard.cache_add(lock_key, 1, settings.PUBLIC_CACHE_LOCK_TIMEOUT)
    if locked is False:
        # Another process is rebuilding it: with an older copy, answer that at once (the
        # stale-while-revalidate of a herd); without one, wait within the budget.
        if budget <= settings.PUBLIC_RENDER_BUDGET:
            settle(None)
            return pending, True
        deadline = time.monotonic() + budget
        page = None
        while page is None and time.monotonic() < deadline:
            time.sleep(0.02)
            page = guard.cache_get(key, store=guard.pages_cache())
        if page is not None:
            _memo_put(key, page)
        settle(page)
        return pending, True
    if not guard.take_rebuild_slot():
        # Shedding a miss: this process already rebuilds as much as it may at once.
        if locked:
            guard.cache_delete(lock_key)
        settle(None)
        return pending, True

    # The rebuild may run in a thread of its own, which starts in no language.
    language = translation.get_language() or settings.LANGUAGE_CODE

    def rebuild() -> CachedPage | HttpResponse:
        try:
            with translation.override(language):
                return _rebuild(view, request, args, kwargs, key=key, key_name=key_name, base_name=base_name)
        finally:
            guard.release_rebuild_slot()
            if locked:
                guard.cache_delete(lock_key)

    def follow(done: Future[CachedPage | HttpResponse]) -> None:
        exc = done.exception()
        if exc is not None:
            if not isinstance(exc, DatabaseError | Http404 | PermissionDenied | guard.Unavailable):
                logger.error("rebuild of %s failed", key_name, exc_info=exc)
            settle(exc=exc)
        else:
            settle(done.result())

    started = time.monotonic()
    future, _done = run_with_budget(
        rebuild, name=key_name, budget=budget, max_seconds=settings.PUBLIC_REBUILD_TIMEOUT
    )
    future.add_done_callback(follow)
    try:
        # `follow` has run if the rebuild finished in time; what is left is a few ms.
        pending.exception(timeout=max(0.01, budget - (time.monotonic() - started)) if budget > 0 else None)
    except TimeoutError:
        return pending, False
    return pending, True


def _rebuild(
    view: View, request: HttpRequest, args: Any, kwargs: Any, *, key: str, key_name: str, base_name: str
) -> CachedPage | HttpResponse:
    """One rebuild: render, then store the page under its key, as the last good copy, and
    on disk for the snapshot pages. Runs in the request's thread or in the background."""
    try:
        response = _build(view, request, args, kwargs)
    except DatabaseError as exc:
        logger.warning("database unavailable while rendering %s: %s", key_name, exc)
        guard.note_database_down()
        raise
    if response.status_code == 503:
        # The view caught the outage itself (DRF's handler does) and said so.
        guard.note_database_down()
        return response
    if response.status_code != 200:
        return response
    guard.note_database_ok()
    render_problem_clear(kind=RenderProblem.Kind.PAGE, keys=[key_name])
    page = CachedPage.from_response(response)
    store = guard.pages_cache()
    guard.cache_set(key, page, settings.PUBLIC_CACHE_TTL, store=store)
    _memo_put(key, page)
    guard.cache_set(f"page:{key_name}:last", page, LAST_GOOD_TTL, store=store)
    if key_name == base_name:
        snapshot_write(base_name, page)
    return page
