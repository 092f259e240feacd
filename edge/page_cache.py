"""Cached public reads that survive a herd, a cache outage and a database outage.

`public_page` wraps a view that renders public data the same for everyone (the status
page, the Statuspage-compatible JSON, the feeds):

- Entries are keyed by the public-state version stamp (edge.version), so a write is
  visible on the next request; a short TTL only refreshes clock-driven text (durations
  of ongoing incidents, "today" in the grid).
- At most one rebuild per key runs at a time across all processes: the first request
  takes a lock in the shared cache; the others wait briefly for its result and, if it
  is slow, get the previous render instead of piling onto the database.
- Every good render of the pages named in SNAPSHOT_NAMES is also written to disk. With
  the database down or too slow, those pages answer 200 from the snapshot, marked stale
  with its age; nginx serves the same files when the app itself is down.
- The cache may be Redis and Redis may be down: every cache call is guarded, and a
  small per-process fallback keeps the page cheap until Redis is back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import wraps
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.utils.http import http_date, quote_etag

from edge.http import PUBLIC_CACHE_CONTROL, SNAPSHOT_HEADER, is_not_modified
from edge.version import public_state_version

logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]

# Pages kept on disk for when the database is down, and their file names (nginx's
# docker/nginx.conf serves the same names).
SNAPSHOT_NAMES = {"index": "index.html", "api-v2-summary": "api-v2-summary.json"}
SNAPSHOT_MARKER = b"<!--snapshot-notice-->"
DB_DOWN_KEY = "public-page:database-down"


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


# --- Guarded cache access --------------------------------------------------------------

_local: dict[str, tuple[float, Any]] = {}
_local_lock = threading.Lock()
LOCAL_FALLBACK_TTL = 5.0


def _cache_get(key: str) -> Any:
    try:
        return cache.get(key)
    except Exception:  # noqa: BLE001 - the shared cache is optional for correctness
        logger.warning("cache unavailable (get %s)", key, exc_info=False)
        with _local_lock:
            hit = _local.get(key)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return None


def _cache_set(key: str, value: Any, timeout: float) -> None:
    try:
        cache.set(key, value, timeout=timeout)
    except Exception:  # noqa: BLE001
        with _local_lock:
            _local[key] = (time.monotonic() + min(timeout, LOCAL_FALLBACK_TTL), value)


def _cache_add(key: str, value: Any, timeout: float) -> bool | None:
    """True if added, False if present, None if the cache is unreachable."""
    try:
        return bool(cache.add(key, value, timeout=timeout))
    except Exception:  # noqa: BLE001
        return None


def _cache_delete(key: str) -> None:
    try:
        cache.delete(key)
    except Exception:  # noqa: BLE001 - the lock expires by itself
        logger.debug("could not release %s", key)


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


def _memo_put(key: str, page: CachedPage) -> None:
    if len(_memo) >= MEMO_MAX_ENTRIES:
        # Oldest first; a racing thread may have removed it already.
        _memo.pop(next(iter(_memo), ""), None)
    _memo[key] = (page.built_at + settings.PUBLIC_CACHE_TTL, page)


# --- Snapshots on disk -------------------------------------------------------------------


def snapshot_dir() -> Path:
    return Path(settings.VAR_DIR) / "snapshots"


def snapshot_write(name: str, page: CachedPage) -> None:
    filename = SNAPSHOT_NAMES.get(name)
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
    filename = SNAPSHOT_NAMES.get(name)
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
    """The response for a cached page: conditional GET, caching headers, no cookies."""
    if is_not_modified(request, page.etag, datetime.fromtimestamp(int(page.built_at), tz=UTC)):
        response = HttpResponse(status=304)
    else:
        body = page.body
        if stale and SNAPSHOT_MARKER in body:
            body = body.replace(SNAPSHOT_MARKER, _stale_notice(page).encode(), 1)
        response = HttpResponse(body if request.method != "HEAD" else b"", content_type=page.content_type)
        response["Content-Length"] = str(len(body))
    response["ETag"] = page.etag
    response["Last-Modified"] = http_date(page.built_at)
    if stale:
        age = max(0, int(time.time() - page.built_at))
        response["Age"] = str(age)
        response[SNAPSHOT_HEADER] = "stale"
        response["X-Snapshot-Age"] = str(age)
        response["Cache-Control"] = "public, max-age=10, stale-if-error=86400"
    else:
        response["Cache-Control"] = PUBLIC_CACHE_CONTROL
    return response


def _stale_notice(page: CachedPage) -> str:
    built = datetime.fromtimestamp(page.built_at, tz=UTC)
    minutes = max(0, int((time.time() - page.built_at) // 60))
    return (
        '<div class="snapshot-notice" role="status"><strong>Live data is temporarily unavailable.</strong> '
        f'This is a snapshot from <time datetime="{built.isoformat()}">{built:%Y-%m-%d %H:%M} UTC</time> '
        f"({minutes} min old).</div>"
    )


# --- The decorator --------------------------------------------------------------------------


def _database_down(base_name: str, key_name: str) -> CachedPage | None:
    """Note the outage (so the next requests skip the database for a moment) and return
    the snapshot to serve instead, if this page keeps one."""
    _cache_set(DB_DOWN_KEY, 1, settings.PUBLIC_CACHE_DB_BACKOFF)
    return snapshot_read(base_name) if key_name == base_name else None


def _build(view: View, request: HttpRequest, args: Any, kwargs: Any) -> HttpResponse:
    response = view(request, *args, **kwargs)
    render = getattr(response, "render", None)
    if callable(render):
        response = render()
    return response


def public_page(name: str | None = None, *, vary_on_query: Iterable[str] = ()) -> Callable[[View], View]:
    """Serve a view's public, user-independent output from the versioned cache.

    `name` is the cache (and snapshot) name. Only the query parameters named in
    `vary_on_query` are part of the key, so random query strings cannot fill the cache
    or force a rebuild per request.
    """
    query_names = tuple(vary_on_query)

    def decorator(view: View) -> View:
        base_name = name or f"{view.__module__}.{view.__qualname__}"

        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            key_name = base_name
            if args or kwargs:
                key_name += (
                    ":" + hashlib.sha256(repr((args, sorted(kwargs.items()))).encode()).hexdigest()[:16]
                )
            if query_names:
                query = [(q, request.GET.get(q, "")) for q in query_names]
                key_name += ":" + hashlib.sha256(repr(query).encode()).hexdigest()[:16]
            version = public_state_version()
            key = f"page:{key_name}:{version}"
            page = _memo_get(key)
            if page is None:
                page = _cache_get(key)
                if page is not None:
                    _memo_put(key, page)
            if page is not None:
                return page_response(request, page)

            if key_name == base_name and _cache_get(DB_DOWN_KEY):
                # The database failed moments ago: answer from the snapshot without
                # trying again on every request (no retry storm against a sick database).
                fallback = snapshot_read(base_name)
                if fallback is not None:
                    return page_response(request, fallback, stale=True)

            lock_key = f"lock:{key}"
            locked = _cache_add(lock_key, 1, settings.PUBLIC_CACHE_LOCK_TIMEOUT)
            if locked is False:
                # Someone else is rebuilding this page. Serve the previous render at once
                # (stale-while-revalidate: it is at most one rebuild old) rather than
                # queueing behind the rebuild or adding to the database's load. Only a
                # page never rendered before waits for the first build.
                previous = _cache_get(f"page:{key_name}:last")
                if previous is not None:
                    return page_response(request, previous)
                deadline = time.monotonic() + settings.PUBLIC_CACHE_WAIT
                while time.monotonic() < deadline:
                    time.sleep(0.02)
                    page = _cache_get(key)
                    if page is not None:
                        return page_response(request, page)
                    if key_name == base_name and _cache_get(DB_DOWN_KEY):
                        # The build we waited for failed on the database: don't try again.
                        fallback = snapshot_read(base_name)
                        if fallback is not None:
                            return page_response(request, fallback, stale=True)
            try:
                try:
                    response = _build(view, request, args, kwargs)
                except DatabaseError:
                    logger.warning("database unavailable while rendering %s", key_name, exc_info=True)
                    fallback = _database_down(base_name, key_name)
                    if fallback is None:
                        raise  # DatabaseUnavailableMiddleware answers 503 + Retry-After
                    return page_response(request, fallback, stale=True)
                except Exception:
                    # One entry that cannot be rendered must not take the page down:
                    # serve the last good copy, marked stale, and tell staff in the log.
                    logger.exception("could not render %s; serving the last good copy", key_name)
                    previous = _cache_get(f"page:{key_name}:last")
                    if previous is None and key_name == base_name:
                        previous = snapshot_read(base_name)
                    if previous is None:
                        raise
                    return page_response(request, previous, stale=True)
                if response.status_code == 503:
                    # The view caught the outage itself (DRF's handler does) and said so.
                    fallback = _database_down(base_name, key_name)
                    return response if fallback is None else page_response(request, fallback, stale=True)
                if response.status_code != 200:
                    return response
                page = CachedPage.from_response(response)
                _cache_set(key, page, settings.PUBLIC_CACHE_TTL)
                _memo_put(key, page)
                _cache_set(f"page:{key_name}:last", page, 86400)
                if key_name == base_name:
                    snapshot_write(base_name, page)
                return page_response(request, page)
            finally:
                if locked:
                    _cache_delete(lock_key)

        wrapped.shed_exempt = True  # type: ignore[attr-defined]
        return wrapped

    return decorator
