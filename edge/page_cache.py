"""Cached public reads that survive a herd, a cache outage and a database outage.

`public_page` serves a view whose output is the same for everyone (the status page, the
Statuspage-compatible JSON, the feeds) from a cache keyed by the public-state version,
with one rebuild at a time, a time budget, stale answers and snapshots on disk. A miss
is decided by pure functions (`decide`, `decide_outcome`) and acted on by `_miss`.
Design: docs/adr/0003-page-cache.md.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import Enum
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.http import http_date, urlencode
from django.utils.translation import gettext as _

from edge.backoff import database
from edge.compress import accepts_gzip, compressible
from edge.counters import counter_add
from edge.deadline import deadline, run_with_budget
from edge.http import PUBLIC_CACHE_CONTROL, is_not_modified
from edge.middleware import service_unavailable
from edge.models import RenderProblem
from edge.render_problems import render_problem_clear, render_problem_record
from edge.shared_cache import cache_add, cache_delete, cache_get, cache_set, pages_cache
from edge.slots import rebuilds
from edge.snapshots import CachedPage, snapshot_read, snapshot_write
from edge.snapshots import memo as _memo  # noqa: F401 - tests clear it
from edge.snapshots import memo_get as _memo_get
from edge.snapshots import memo_last as _memo_last
from edge.snapshots import memo_put as _memo_put
from edge.stale import Unavailable, mark_stale, stale_etag
from edge.version import public_state_version
from edge.wake import announce, wait_for

logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]
# A query parameter's normaliser: its canonical value, None for "as if absent", or
# Http404 for a value that names nothing.
Normaliser = Callable[[str], str | None]

SNAPSHOT_MARKER = b"<!--snapshot-notice-->"
LAST_GOOD_TTL = 86400


def language_variant(name: str, language: str) -> str:
    """The cache name of a page in a language: the name itself in the default language
    (so English keys and snapshot files are what they always were), `index@fr` else."""
    return name if language == settings.LANGUAGE_CODE else f"{name}@{language}"


def page_response(request: HttpRequest, page: CachedPage, *, stale: bool = False) -> HttpResponse:
    """The response for a cached page: conditional GET, caching headers, no cookies.

    A stale answer (older than the current public state) carries the stale header, the
    notice in HTML pages, a weak ETag of its own and a short max-age.
    """
    # The gzip bytes stored with the page (a stale answer differs from them: the
    # middleware compresses that one); weak ETag, as Django's GZipMiddleware does.
    packed = page.gzip_body if not stale and accepts_gzip(request) else None
    etag = stale_etag(page.etag) if stale else page.etag
    if packed is not None and etag.startswith('"'):
        etag = "W/" + etag
    if is_not_modified(request, etag, datetime.fromtimestamp(int(page.built_at), tz=UTC)):
        response = HttpResponse(status=304)
    else:
        body = page.body if packed is None else packed
        if stale and SNAPSHOT_MARKER in body:
            body = body.replace(SNAPSHOT_MARKER, _stale_notice(page).encode(), 1)
        response = HttpResponse(body if request.method != "HEAD" else b"", content_type=page.content_type)
        response["Content-Length"] = str(len(body))
        if packed is not None:
            response["Content-Encoding"] = "gzip"
    if compressible(page.content_type):
        patch_vary_headers(response, ("Accept-Encoding",))
    response["ETag"] = etag
    response["Last-Modified"] = http_date(page.built_at)
    if stale:
        mark_stale(response, built_at=page.built_at)
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


def _for_snapshot(page: CachedPage) -> CachedPage:
    """The copy written to disk: the files nginx serves when the app itself is down, so
    the notice is written into them (the app cannot fill it in then). Its text holds
    whenever the file is shown; live.js removes it once the live data is back."""
    if SNAPSHOT_MARKER not in page.body:
        return page
    built = datetime.fromtimestamp(page.built_at, tz=UTC)
    when = f'<time datetime="{built.isoformat()}">{built:%Y-%m-%d %H:%M} UTC</time>'
    notice = (
        '<div class="snapshot-notice" role="status"><strong>'
        + _("This page may be out of date.")
        + "</strong> "
        + _("Live data is temporarily unavailable: this is a copy saved at %(when)s.") % {"when": when}
        + "</div>"
    )
    return replace(page, body=page.body.replace(SNAPSHOT_MARKER, notice.encode(), 1), gzip_body=None)


# --- Deciding ------------------------------------------------------------------------------


class Serve(Enum):
    FALLBACK = "fallback"  # the older copy, marked stale; else 503 + Retry-After
    CLAIM = "claim"  # try to become the renderer (cross-process lock, rebuild slot)
    RENDER = "render"
    WAIT_HERE = "wait-here"  # a rebuild runs in this process: wait for it
    WAIT_ELSEWHERE = "wait-elsewhere"  # another process renders a page we have no copy of


@dataclass(frozen=True)
class Claim:
    lock: bool | None  # True: ours; False: another process holds it; None: cache away
    slot: bool  # may render here
    counted: bool = True  # holds one of the PUBLIC_MAX_REBUILDS slots (cheap misses do not)


@dataclass(frozen=True)
class Miss:
    """What a miss knows before it acts."""

    backing_off: bool
    rebuilding_here: bool
    has_previous: bool
    # No older copy, and a longer budget for a first render than for a rebuild.
    first_render: bool
    claim: Claim | None = None


@dataclass(frozen=True)
class Decision:
    serve: Serve
    retry_after: int = 0


def decide(miss: Miss, *, db_retry_after: int, shed_retry_after: int) -> Decision:
    """Pure: what a miss does next (a Serve.CLAIM comes back with the claim filled in)."""
    if miss.backing_off:
        # The database failed moments ago: no retry storm against a sick database.
        return Decision(Serve.FALLBACK, db_retry_after)
    if miss.rebuilding_here:
        # Answer the older copy at once rather than wait (the rebuild may be past its
        # budget already); with none, wait for it within the budget.
        return Decision(Serve.FALLBACK, shed_retry_after) if miss.has_previous else Decision(Serve.WAIT_HERE)
    if miss.claim is None:
        return Decision(Serve.CLAIM)
    if miss.claim.lock is False:
        # The stale-while-revalidate of a herd: with an older copy, answer it at once.
        if miss.first_render:
            return Decision(Serve.WAIT_ELSEWHERE)
        return Decision(Serve.FALLBACK, shed_retry_after)
    if not miss.claim.slot:
        # Shedding: this process already rebuilds as much as it may at once.
        return Decision(Serve.FALLBACK, shed_retry_after)
    return Decision(Serve.RENDER)


Outcome = CachedPage | HttpResponse | None
PASS_THROUGH = (Http404, PermissionDenied, Unavailable)


def decide_outcome(outcome: Outcome, error: BaseException | None) -> Decision | None:
    """Pure: how a finished (or abandoned) rebuild is answered; None: the outcome as is
    (a page is served fresh, another response unchanged)."""
    if isinstance(error, DatabaseError):
        return Decision(Serve.FALLBACK, settings.DB_UNAVAILABLE_RETRY_AFTER)
    if outcome is None and error is None:
        # Not rebuilt here (shed, or rebuilt by another process meanwhile).
        return Decision(Serve.FALLBACK, settings.SHED_RETRY_AFTER)
    if isinstance(outcome, HttpResponse) and outcome.status_code == 503:
        return Decision(Serve.FALLBACK, settings.DB_UNAVAILABLE_RETRY_AFTER)
    return None


# --- Acting ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One cached variant of a page: its names and its key under the current version."""

    key: str
    key_name: str  # page, language, arguments and query: what "last good" is kept per
    base_name: str  # page and language: what the snapshot is kept per

    @property
    def lock_key(self) -> str:
        return f"lock:{self.key}"

    @property
    def last_key(self) -> str:
        return f"page:{self.key_name}:last"


def _previous(key_name: str, base_name: str) -> CachedPage | None:
    """The last good render of this variant, else the page's snapshot on disk."""
    # This process's own copy first: no round trip, nothing to unpickle, and under a
    # slow database this is what every stale answer costs.
    previous: CachedPage | None = _memo_last.get(key_name)
    if previous is None:
        previous = cache_get(f"page:{key_name}:last", store=pages_cache())
    if previous is None and key_name == base_name:
        previous = snapshot_read(base_name)
    return previous


def _fallback(
    request: HttpRequest, variant: Variant, *, retry_after: int, previous: CachedPage | None = None
) -> HttpResponse:
    """The older copy marked stale, else 503 + Retry-After. Never touches the database."""
    fresh = _memo_get(variant.key)
    if fresh is not None:
        # The rebuild this request would not wait for has just stored its page (the
        # moment between storing it and settling its waiters): that page, not stale.
        return page_response(request, fresh)
    previous = previous or _previous(variant.key_name, variant.base_name)
    if previous is not None:
        return page_response(request, previous, stale=True)
    return service_unavailable(
        request, message=_("This page is being refreshed. Please retry shortly."), retry_after=retry_after
    )


# Rebuilds under way in this process, by key: a second miss waits for the first.
_inflight: dict[str, Future[Outcome]] = {}
_inflight_lock = threading.Lock()


def _join_or_lead(key: str) -> tuple[Future[Outcome], bool]:
    """The future of this key's rebuild here, and whether we lead it (registered at once,
    so a miss that arrives meanwhile waits for ours)."""
    with _inflight_lock:
        running = _inflight.get(key)
        if running is not None:
            return running, False
        pending: Future[Outcome] = Future()
        pending.set_running_or_notify_cancel()
        _inflight[key] = pending
        return pending, True


def _settle(
    key: str, pending: Future[Outcome], outcome: Outcome = None, exc: BaseException | None = None
) -> None:
    with _inflight_lock:
        if _inflight.get(key) is pending:
            del _inflight[key]
    if exc is not None:
        pending.set_exception(exc)
    else:
        pending.set_result(outcome)


def _take_claim(variant: Variant, *, cheap: bool) -> Claim:
    lock = cache_add(variant.lock_key, 1, settings.PUBLIC_CACHE_LOCK_TIMEOUT)
    if lock is False:
        return Claim(lock=False, slot=False)
    if cheap:
        # Never shed (docs/adr/0017-prerender.md): at most one render per variant and
        # process (the others wait for it), and cheap variants are few.
        return Claim(lock=lock, slot=True, counted=False)
    slot = rebuilds.take()
    if not slot and lock:
        cache_delete(variant.lock_key)
    return Claim(lock=lock, slot=slot, counted=slot)


def _wait(future: Future[Outcome], budget: float) -> bool:
    try:
        future.exception(timeout=budget if budget > 0 else None)
    except TimeoutError:
        return False
    return True


def _render(
    view: View,
    request: HttpRequest,
    args: Any,
    kwargs: Any,
    variant: Variant,
    *,
    claim: Claim,
    pending: Future[Outcome],
    budget: float,
) -> bool:
    """Start the rebuild within the budget; True if it settled `pending` in time."""
    # The rebuild may run in a thread of its own, which starts in no language.
    language = translation.get_language() or settings.LANGUAGE_CODE

    def rebuild() -> CachedPage | HttpResponse:
        try:
            with translation.override(language):
                return _rebuild(view, request, args, kwargs, variant)
        finally:
            if claim.counted:
                rebuilds.release()
            if claim.lock:
                cache_delete(variant.lock_key)

    def follow(done: Future[CachedPage | HttpResponse]) -> None:
        exc = done.exception()
        if exc is not None and not isinstance(exc, (DatabaseError, *PASS_THROUGH)):
            logger.error("rebuild of %s failed", variant.key_name, exc_info=exc)
        _settle(variant.key, pending, None if exc else done.result(), exc)

    started = time.monotonic()
    future, _done = run_with_budget(
        rebuild, name=variant.key_name, budget=budget, max_seconds=settings.PUBLIC_REBUILD_TIMEOUT
    )
    future.add_done_callback(follow)
    # `follow` has run if the rebuild finished in time; what is left is a few ms.
    return _wait(pending, max(0.01, budget - (time.monotonic() - started)) if budget > 0 else 0)


def _rebuild(
    view: View, request: HttpRequest, args: Any, kwargs: Any, variant: Variant
) -> CachedPage | HttpResponse:
    """One rebuild: render, then store the page under its key, as the last good copy, and
    on disk for the snapshot pages. Runs in the request's thread or in the background."""
    try:
        response = _build(view, request, args, kwargs)
    except DatabaseError as exc:
        logger.warning("database unavailable while rendering %s: %s", variant.key_name, exc)
        database.note_down()
        counter_add("page_cache_rebuilds", page=variant.base_name, outcome="database_error")
        raise
    counter_add("page_cache_rebuilds", page=variant.base_name, outcome=_rebuild_outcome(response.status_code))
    if response.status_code == 503:
        # The view caught the outage itself (DRF's handler does) and said so.
        database.note_down()
        return response
    if response.status_code != 200:
        return response
    database.note_ok()
    render_problem_clear(kind=RenderProblem.Kind.PAGE, keys=[variant.key_name])
    page = CachedPage.from_response(response)
    store = pages_cache()
    cache_set(variant.key, page, settings.PUBLIC_CACHE_TTL, store=store)
    _memo_put(variant.key, page)
    cache_set(variant.last_key, page, LAST_GOOD_TTL, store=store)
    announce(variant.key, store=store)
    if variant.key_name == variant.base_name:
        snapshot_write(variant.base_name, _for_snapshot(page))
    return page


def _rebuild_outcome(status_code: int) -> str:
    return "ok" if status_code == 200 else "unavailable" if status_code == 503 else "other"


def _build(view: View, request: HttpRequest, args: Any, kwargs: Any) -> HttpResponse:
    response = view(request, *args, **kwargs)
    render = getattr(response, "render", None)
    if callable(render):
        response = render()
    return response


def _miss(
    view: View, request: HttpRequest, args: Any, kwargs: Any, variant: Variant, *, cheap: bool
) -> HttpResponse:
    """Decide, act, repeat until the answer is known (at most twice: claim, then act)."""
    previous = _previous(variant.key_name, variant.base_name)
    budget, first_budget = float(settings.PUBLIC_RENDER_BUDGET), float(settings.PUBLIC_FIRST_RENDER_BUDGET)
    first_render = previous is None and first_budget > budget
    wait_budget = first_budget if first_render else budget
    backing_off = database.active()
    future, leading = (None, False) if backing_off else _join_or_lead(variant.key)
    miss = Miss(
        backing_off=backing_off,
        rebuilding_here=not leading and future is not None,
        has_previous=previous is not None,
        first_render=first_render,
    )
    retries = {
        "db_retry_after": settings.DB_UNAVAILABLE_RETRY_AFTER,
        "shed_retry_after": settings.SHED_RETRY_AFTER,
    }
    decision = decide(miss, **retries)
    if decision.serve is Serve.CLAIM:
        miss = replace(miss, claim=_take_claim(variant, cheap=cheap))
        decision = decide(miss, **retries)
    if decision.serve is Serve.FALLBACK:
        if leading and future is not None:
            _settle(variant.key, future)  # followers answer as we do
        return _fallback(request, variant, retry_after=decision.retry_after, previous=previous)
    assert future is not None
    if decision.serve is Serve.WAIT_ELSEWHERE:
        page = wait_for(variant.key, store=pages_cache(), timeout=wait_budget)
        if page is not None:
            _memo_put(variant.key, page)
        _settle(variant.key, future, page)
        done = True
    elif decision.serve is Serve.RENDER:
        assert miss.claim is not None
        done = _render(
            view, request, args, kwargs, variant, claim=miss.claim, pending=future, budget=wait_budget
        )
    else:
        done = _wait(future, wait_budget)
    if not done:
        # Over budget: answer now; the rebuild goes on and leaves its result cached.
        return _fallback(request, variant, retry_after=settings.SHED_RETRY_AFTER)
    return _answer(request, variant, future)


def _answer(request: HttpRequest, variant: Variant, future: Future[Outcome]) -> HttpResponse:
    error = future.exception()
    outcome = None if error is not None else future.result()
    decision = decide_outcome(outcome, error)
    if decision is not None:
        response = _fallback(request, variant, retry_after=decision.retry_after)
        if response.status_code == 503 and isinstance(error, DatabaseError):
            raise error  # DatabaseUnavailableMiddleware answers 503 + Retry-After
        return response
    if error is not None:
        if isinstance(error, PASS_THROUGH):
            raise error
        # One entry that cannot be rendered must not take the page down: serve the last
        # good copy, marked stale, and tell staff (the log, and a render problem on the
        # console's Now page until the page renders again).
        logger.error("could not render %s; serving the last good copy", variant.key_name, exc_info=error)
        render_problem_record(
            kind=RenderProblem.Kind.PAGE, key=variant.key_name, label=request.get_full_path(), error=error
        )
        previous = _previous(variant.key_name, variant.base_name)
        if previous is None:
            raise error
        return page_response(request, previous, stale=True)
    if isinstance(outcome, CachedPage):
        return page_response(request, outcome)
    assert outcome is not None
    return outcome


# --- Rendering ahead of visitors (edge/prerender.py) ------------------------------------


class Prerendered(Enum):
    CACHED = "cached"  # already there under the current version
    BUSY = "busy"  # rendered meanwhile by a request or another process
    RENDERED = "rendered"
    REFUSED = "refused"  # the view answered something other than 200 (not stored)


def _prerender(view: View, request: HttpRequest, args: Any, kwargs: Any, variant: Variant) -> Prerendered:
    """Render a variant into the cache, unless it is there or being rendered. Requests for
    it meanwhile wait for this render (the in-process future, the cross-process lock)."""
    if _hit(variant.key) is not None:
        return Prerendered.CACHED
    future, leading = _join_or_lead(variant.key)
    if not leading:
        return Prerendered.BUSY
    lock = cache_add(variant.lock_key, 1, settings.PUBLIC_CACHE_LOCK_TIMEOUT)
    if lock is False:
        # Another process renders it: requests that joined ours get its result.
        page = wait_for(variant.key, store=pages_cache(), timeout=settings.PUBLIC_FIRST_RENDER_BUDGET)
        _settle(variant.key, future, page)
        return Prerendered.BUSY
    try:
        with deadline(settings.PUBLIC_REBUILD_TIMEOUT):
            outcome = _rebuild(view, request, args, kwargs, variant)
    except BaseException as exc:
        _settle(variant.key, future, exc=exc)
        raise
    finally:
        if lock:
            cache_delete(variant.lock_key)
    _settle(variant.key, future, outcome)
    return Prerendered.RENDERED if isinstance(outcome, CachedPage) else Prerendered.REFUSED


# --- The decorator --------------------------------------------------------------------------


def _normalised_query(request: HttpRequest, normalisers: Mapping[str, Normaliser]) -> list[tuple[str, str]]:
    query = []
    for param, normalise in normalisers.items():
        raw = request.GET.get(param)
        value = normalise(raw) if raw else None
        if value is not None:
            query.append((param, value))
    return query


def _variant(
    request: HttpRequest, page_name: str, normalisers: Mapping[str, Normaliser], args: Any, kwargs: Any
) -> Variant:
    """Name the variant and give the view only the normalised query (may raise Http404)."""
    base_name = language_variant(page_name, translation.get_language() or settings.LANGUAGE_CODE)
    key_name = base_name
    if args or kwargs:
        key_name += ":" + hashlib.sha256(repr((args, sorted(kwargs.items()))).encode()).hexdigest()[:16]
    query = _normalised_query(request, normalisers)
    request.GET = QueryDict(urlencode(query))
    if query:
        key_name += ":" + hashlib.sha256(repr(query).encode()).hexdigest()[:16]
    return Variant(key=f"page:{key_name}:{public_state_version()}", key_name=key_name, base_name=base_name)


def _hit(key: str) -> CachedPage | None:
    page = _memo_get(key)
    if page is None:
        page = cache_get(key, store=pages_cache())
        if page is not None:
            _memo_put(key, page)
    return page


def public_page(
    name: str | None = None, *, vary_on_query: Mapping[str, Normaliser] | None = None, cheap: bool = False
) -> Callable[[View], View]:
    """Serve a view's public, user-independent output from the versioned cache.

    `name` is the cache (and snapshot) name. Only the query parameters named in
    `vary_on_query` make variants, each through its normaliser; the view is called with
    the normalised query only, so random or out-of-range values can neither fill the
    cache nor make a page render differently from its key. `cheap`: the page's plain
    variant (no query) renders in milliseconds and is never shed (its query variants
    are); the wrapped view's `prerender(request, ...)` renders it ahead of visitors
    (edge/prerender.py).
    """
    normalisers = dict(vary_on_query or {})

    def decorator(view: View) -> View:
        page_name = name or f"{view.__module__}.{view.__qualname__}"

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            variant = _variant(request, page_name, normalisers, args, kwargs)
            page = _hit(variant.key)
            if page is not None:
                counter_add("page_cache_hits", page=variant.base_name)
                return page_response(request, page)  # a hit: always served
            return _miss(view, request, args, kwargs, variant, cheap=cheap and not request.GET)

        def prerender(request: HttpRequest, *args: Any, **kwargs: Any) -> Prerendered:
            return _prerender(
                view, request, args, kwargs, _variant(request, page_name, normalisers, args, kwargs)
            )

        wrapped.shed_exempt = True  # type: ignore[attr-defined]
        # Anonymous GETs of it may be read from the replica (edge/replica.py).
        wrapped.public_read = True  # type: ignore[attr-defined]
        # functools.wraps copies it onto wrappers of this view (the language entry of `/`).
        wrapped.prerender = prerender  # type: ignore[attr-defined]
        return wrapped

    return decorator
