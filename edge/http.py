"""HTTP caching for public reads: validators (ETag, Last-Modified, 304), Cache-Control
for shared caches, and memoised anonymous builds (`memoize_public`) for the API's
parameterised reads. Requests with credentials are `private, no-cache` and never shared.
Design: docs/adr/0003-page-cache.md.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotModified
from django.utils.cache import patch_vary_headers
from django.utils.http import http_date

from edge.backoff import database
from edge.deadline import run_with_budget
from edge.models import RenderProblem
from edge.render_problems import render_problem_clear, render_problem_record
from edge.shared_cache import cache_get, cache_set, pages_cache
from edge.slots import rebuilds
from edge.stale import SNAPSHOT_HEADER, Unavailable, mark_stale, stale_etag
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
# Set on the request by memoize_public when it answers an older copy (a timestamp).
STALE_ATTRIBUTE = "_edge_stale_built_at"

T = TypeVar("T")


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
        etag = stale_etag(etag)
        last_modified = datetime.fromtimestamp(stale_built_at, tz=UTC)
    if last_modified is None:
        last_modified = version_time(public_state_version()) if anonymous else None
    response.headers["ETag"] = etag
    if last_modified is not None:
        response.headers["Last-Modified"] = http_date(last_modified.timestamp())
    if stale_built_at is not None:
        mark_stale(response, built_at=stale_built_at)
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


@dataclass(frozen=True)
class _Memo:
    """Where one URL's memoised build lives: under the current version, and as the last
    good copy (with its build time) whatever the version."""

    prefix: str
    digest: str
    key: str | None  # None while the version stamp is unavailable: nothing is memoised
    last_key: str

    @classmethod
    def for_request(cls, request: HttpRequest, prefix: str) -> _Memo:
        version = public_state_version()
        digest = _request_digest(request)
        key = f"{prefix}:{version}:{digest}" if version != "unavailable" else None
        return cls(prefix=prefix, digest=digest, key=key, last_key=f"{prefix}:last:{digest}")

    def fresh(self) -> Any:
        return None if self.key is None else cache_get(self.key, store=pages_cache())

    def last(self) -> tuple[float, Any] | None:
        return cache_get(self.last_key, store=pages_cache())  # type: ignore[no-any-return]

    def store(self, value: Any) -> None:
        store = pages_cache()
        if self.key is not None:
            cache_set(self.key, value, MEMO_TIMEOUT, store=store)
        cache_set(self.last_key, (time.time(), value), 86400, store=store)


# URLs being built in this process: one build per URL at a time, the others answer the
# older copy.
_inflight: set[str] = set()
_inflight_lock = threading.Lock()


def _claim(digest: str) -> bool:
    with _inflight_lock:
        if digest in _inflight:
            return False
        _inflight.add(digest)
    if rebuilds.take():
        return True
    with _inflight_lock:
        _inflight.discard(digest)
    return False


def _build_and_store(memo: _Memo, build: Callable[[], T]) -> T:
    try:
        value = build()
    except DatabaseError:
        database.note_down()
        raise
    finally:
        rebuilds.release()
        with _inflight_lock:
            _inflight.discard(memo.digest)
    database.note_ok()
    render_problem_clear(kind=RenderProblem.Kind.PAGE, keys=[f"{memo.prefix}:{memo.digest}"])
    memo.store(value)
    return value


def memoize_public(request: HttpRequest, build: Callable[[], T], *, prefix: str = "public-memo") -> T:
    """Build once per public-state version for anonymous callers; otherwise just build.

    For the API's parameterised reads (public pages use edge.page_cache.public_page). An
    anonymous build has PUBLIC_RENDER_BUDGET and shares the rebuild slots and database
    backoff of the pages: past the budget, while the database backs off, or with every
    slot taken, the answer is the last good copy for this URL (marked stale by
    finalize_public_response) or `Unavailable` (503 + Retry-After).
    """
    if not is_anonymous_request(request):
        return build()
    memo = _Memo.for_request(request, prefix)
    hit = memo.fresh()
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    if database.active():
        return _last_good(request, memo, retry_after=settings.DB_UNAVAILABLE_RETRY_AFTER)
    if not _claim(memo.digest):
        return _last_good(request, memo, retry_after=settings.SHED_RETRY_AFTER)
    future, done = run_with_budget(
        lambda: _build_and_store(memo, build),
        name=prefix,
        budget=settings.PUBLIC_RENDER_BUDGET,
        max_seconds=settings.PUBLIC_REBUILD_TIMEOUT,
    )
    if not done and memo.last() is None:
        done = _wait_first_build(future)
    if not done:
        return _last_good(request, memo, retry_after=settings.SHED_RETRY_AFTER)
    return _outcome(request, memo, future)


def _wait_first_build(future: Future[Any]) -> bool:
    """No older copy to answer with: a first build may take a little longer."""
    extra = settings.PUBLIC_FIRST_RENDER_BUDGET - settings.PUBLIC_RENDER_BUDGET
    if extra <= 0:
        return False
    try:
        future.exception(timeout=extra)
    except TimeoutError:
        return False
    return True


def _outcome(request: HttpRequest, memo: _Memo, future: Future[T]) -> T:
    try:
        return future.result()
    except (Http404, PermissionDenied, Unavailable):
        raise
    except DatabaseError:
        previous = memo.last()
        if previous is None:
            raise
    except Exception as exc:
        # One entry that cannot be rendered must not take the read down: the older answer,
        # marked stale, and a render problem for staff until it renders again.
        logger.exception("could not build %s; answering the last good copy", request.path)
        render_problem_record(
            kind=RenderProblem.Kind.PAGE,
            key=f"{memo.prefix}:{memo.digest}",
            label=request.get_full_path(),
            error=exc,
        )
        previous = memo.last()
        if previous is None:
            raise
    setattr(request, STALE_ATTRIBUTE, previous[0])
    return previous[1]  # type: ignore[no-any-return]


def _last_good(request: HttpRequest, memo: _Memo, *, retry_after: int) -> Any:
    previous = memo.last()
    if previous is None:
        raise Unavailable(retry_after=retry_after)
    setattr(request, STALE_ATTRIBUTE, previous[0])
    return previous[1]
