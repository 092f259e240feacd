"""HTTP caching for public reads: ETag, Last-Modified, 304, Cache-Control, memoised bodies.

The status page is read hardest while something else is broken, so public reads must be
cheap to revalidate and safe for shared caches (CDNs, proxies):

- a strong `ETag` (a hash of the body, or of the public-state version) and a
  `Last-Modified` (when the public state last changed);
- `304 Not Modified` with an empty body on `If-None-Match` / `If-Modified-Since`;
- `Cache-Control: public, max-age=60, stale-while-revalidate=30, stale-if-error=86400`,
  so a CDN keeps answering from its copy while we are slow or down;
- no cookies: a response that a shared cache stores must not carry `Set-Cookie` or
  depend on one (`Vary: Cookie`).

A request that carries credentials (an `Authorization` header or a session cookie) may
see staff data, so it is marked `private, no-cache` and never memoised or shared.

Entry points (the status page, the Statuspage-compatible JSON and the feeds are served
by `edge.page_cache.public_page`, which uses the validators and headers defined here):
- `finalize_public_response` post-processes a response a view already holds (the DRF
  views in `api` use it after throttling ran);
- `memoize_public` keeps an expensive anonymous build in the cache, keyed by the
  public-state version so a change is visible on the next request (no TTL guessing; the
  short timeout only bounds clock-driven changes such as a window that starts later).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotModified
from django.utils.cache import patch_vary_headers
from django.utils.http import http_date

from edge import guard
from edge.deadline import run_with_budget
from edge.models import RenderProblem
from edge.render_problems import render_problem_clear, render_problem_record
from edge.version import public_state_version

logger = logging.getLogger(__name__)

PUBLIC_CACHE_CONTROL = (
    f"public, max-age={settings.PUBLIC_CACHE_MAX_AGE}, "
    f"stale-while-revalidate={settings.PUBLIC_CACHE_SWR}, stale-if-error={settings.PUBLIC_CACHE_SIE}"
)
PRIVATE_CACHE_CONTROL = "private, no-cache"
# Memoised bodies live this long at most. Changes made through the services bump the
# version and are visible at once; the timeout only bounds changes driven by the clock.
MEMO_TIMEOUT = 60
SNAPSHOT_HEADER = guard.SNAPSHOT_HEADER
# Set on the request by memoize_public when it answers an older copy (a timestamp).
STALE_ATTRIBUTE = "_edge_stale_built_at"

T = TypeVar("T")
ViewFunc = Callable[..., HttpResponseBase]


def is_anonymous_request(request: HttpRequest) -> bool:
    """True when nothing in the request can identify a user.

    Decided from headers only: touching `request.user` would load the session, and
    Django then adds `Vary: Cookie`, which defeats shared caches.
    """
    if request.META.get("HTTP_AUTHORIZATION"):
        return False
    return settings.SESSION_COOKIE_NAME not in request.COOKIES


def version_time(version: str) -> datetime | None:
    """The moment a public-state version stamp was made: its first 16 hex digits are
    nanoseconds since the epoch (see edge.version.new_version)."""
    try:
        return datetime.fromtimestamp(int(version[:16], 16) / 1_000_000_000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def strong_etag(content: bytes) -> str:
    return '"' + hashlib.sha256(content).hexdigest()[:40] + '"'


def _etag_matches(header: str, etag: str) -> bool:
    # If-None-Match uses the weak comparison (RFC 9110 13.1.2): W/ prefixes are ignored.
    if header.strip() == "*":
        return True
    bare = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == bare for tag in header.split(","))


def _not_modified_since(header: str, last_modified: datetime) -> bool:
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return False
    if since is None or since.tzinfo is None:
        return False
    return last_modified.replace(microsecond=0) <= since


def is_not_modified(request: HttpRequest, etag: str, last_modified: datetime | None) -> bool:
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match is not None:
        # When both are sent, If-None-Match wins and If-Modified-Since is ignored.
        return _etag_matches(if_none_match, etag)
    if_modified_since = request.META.get("HTTP_IF_MODIFIED_SINCE")
    if if_modified_since and last_modified is not None:
        return _not_modified_since(if_modified_since, last_modified)
    return False


def _render(response: HttpResponseBase) -> HttpResponseBase:
    render = getattr(response, "render", None)
    if callable(render) and not getattr(response, "is_rendered", True):
        render()
    return response


def _not_modified(response: HttpResponseBase) -> HttpResponseNotModified:
    not_modified = HttpResponseNotModified()
    # A 304 repeats the validators and caching headers of the 200 it stands for.
    for header in ("ETag", "Last-Modified", "Cache-Control", "Vary", SNAPSHOT_HEADER, "Age"):
        if header in response.headers:
            not_modified.headers[header] = response.headers[header]
    return not_modified


def finalize_public_response(
    request: HttpRequest,
    response: HttpResponseBase,
    *,
    last_modified: datetime | None = None,
    etag: str | None = None,
) -> HttpResponseBase:
    """Add validators and caching headers to a GET/HEAD 200, or turn it into a 304.

    Other methods and statuses pass through untouched: errors and writes are not cached.
    """
    if request.method not in ("GET", "HEAD") or response.status_code != 200:
        return response
    if getattr(response, "streaming", False):
        return response
    _render(response)
    assert isinstance(response, HttpResponse)
    anonymous = is_anonymous_request(request)
    stale_built_at: float | None = getattr(request, STALE_ATTRIBUTE, None)
    if etag is None:
        etag = strong_etag(response.content)
    if stale_built_at is not None:
        etag = guard.stale_etag(etag)
        last_modified = datetime.fromtimestamp(stale_built_at, tz=UTC)
    if last_modified is None:
        last_modified = version_time(public_state_version()) if anonymous else None
    response.headers["ETag"] = etag
    if last_modified is not None:
        response.headers["Last-Modified"] = http_date(last_modified.timestamp())
    if stale_built_at is not None:
        guard.mark_stale(response, built_at=stale_built_at)
    elif anonymous:
        response.headers["Cache-Control"] = PUBLIC_CACHE_CONTROL
    else:
        response.headers["Cache-Control"] = PRIVATE_CACHE_CONTROL
        patch_vary_headers(response, ("Authorization", "Cookie"))
    if is_not_modified(request, etag, last_modified):
        return _not_modified(response)
    return response


def _request_digest(request: HttpRequest) -> str:
    # The absolute URI, not only the path: bodies may contain links built from the host.
    return hashlib.sha256(request.build_absolute_uri().encode()).hexdigest()[:32]


def _memo_key(prefix: str, version: str, request: HttpRequest) -> str:
    return f"{prefix}:{version}:{_request_digest(request)}"


_inflight: set[str] = set()
_inflight_lock = threading.Lock()


def memoize_public(request: HttpRequest, build: Callable[[], T], *, prefix: str = "public-memo") -> T:
    """Build once per public-state version for anonymous callers; otherwise just build.

    For the API's parameterised reads. The status page, the Statuspage-compatible JSON
    and the feeds go through `edge.page_cache.public_page` instead, which adds the
    one-rebuild-per-change lock and the on-disk snapshot for database outages.

    An anonymous build has the same budget as a public page (PUBLIC_RENDER_BUDGET) and
    counts against the same rebuild slots and database backoff: past the budget, while
    the database backs off, or with every slot taken, the answer is the last good copy
    for this URL (marked stale by finalize_public_response) or `guard.Unavailable`, which
    DatabaseUnavailableMiddleware turns into 503 + Retry-After.
    """
    if not is_anonymous_request(request):
        return build()
    store = guard.pages_cache()
    version = public_state_version()
    digest = _request_digest(request)
    key = f"{prefix}:{version}:{digest}" if version != "unavailable" else None
    last_key = f"{prefix}:last:{digest}"
    if key is not None:
        hit = guard.cache_get(key, store=store)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
    if guard.database_backing_off():
        return _last_good(request, last_key, retry_after=settings.DB_UNAVAILABLE_RETRY_AFTER)
    with _inflight_lock:
        # One rebuild per URL at a time in this process; the others answer the older copy.
        busy = digest in _inflight
        if not busy:
            _inflight.add(digest)
    if busy:
        return _last_good(request, last_key, retry_after=settings.SHED_RETRY_AFTER)
    if not guard.take_rebuild_slot():
        with _inflight_lock:
            _inflight.discard(digest)
        return _last_good(request, last_key, retry_after=settings.SHED_RETRY_AFTER)

    def rebuild() -> T:
        try:
            value = build()
        except DatabaseError:
            guard.note_database_down()
            raise
        finally:
            guard.release_rebuild_slot()
            with _inflight_lock:
                _inflight.discard(digest)
        guard.note_database_ok()
        render_problem_clear(kind=RenderProblem.Kind.PAGE, keys=[f"{prefix}:{digest}"])
        if key is not None:
            guard.cache_set(key, value, MEMO_TIMEOUT, store=store)
        guard.cache_set(last_key, (time.time(), value), 86400, store=store)
        return value

    future, done = run_with_budget(
        rebuild,
        name=prefix,
        budget=settings.PUBLIC_RENDER_BUDGET,
        max_seconds=settings.PUBLIC_REBUILD_TIMEOUT,
    )
    if not done and guard.cache_get(last_key, store=store) is None:
        # No older copy to answer with: a first build may take a little longer.
        extra = settings.PUBLIC_FIRST_RENDER_BUDGET - settings.PUBLIC_RENDER_BUDGET
        if extra > 0:
            try:
                future.exception(timeout=extra)
                done = True
            except TimeoutError:
                pass
    if not done:
        return _last_good(request, last_key, retry_after=settings.SHED_RETRY_AFTER)
    try:
        return future.result()
    except DatabaseError:
        previous = guard.cache_get(last_key, store=store)
        if previous is None:
            raise
        setattr(request, STALE_ATTRIBUTE, previous[0])
        return previous[1]  # type: ignore[no-any-return]
    except (Http404, PermissionDenied, guard.Unavailable):
        raise
    except Exception as exc:
        # One entry that cannot be rendered must not take the read down: the older answer,
        # marked stale, and a render problem for staff until it renders again.
        logger.exception("could not build %s; answering the last good copy", request.path)
        render_problem_record(
            kind=RenderProblem.Kind.PAGE, key=f"{prefix}:{digest}", label=request.get_full_path(), error=exc
        )
        previous = guard.cache_get(last_key, store=store)
        if previous is None:
            raise
        setattr(request, STALE_ATTRIBUTE, previous[0])
        return previous[1]  # type: ignore[no-any-return]


def _last_good(request: HttpRequest, last_key: str, *, retry_after: int) -> Any:
    previous = guard.cache_get(last_key, store=guard.pages_cache())
    if previous is None:
        raise guard.Unavailable(retry_after=retry_after)
    setattr(request, STALE_ATTRIBUTE, previous[0])
    return previous[1]
