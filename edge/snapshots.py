"""Rendered pages as values (CachedPage), the per-process memo of them, and the copies
on disk that answer while the database is down (nginx serves the same files when the
app itself is down: docker/nginx.conf). Design: docs/adr/0003-page-cache.md."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse
from django.utils.http import quote_etag

from edge.compress import gzipped

logger = logging.getLogger(__name__)

# Pages kept on disk for when the database is down, and their file names.
SNAPSHOT_NAMES = {"index": "index.html", "api-v2-summary": "api-v2-summary.json"}
MEMO_MAX_ENTRIES = 256


@dataclass(frozen=True)
class CachedPage:
    body: bytes
    content_type: str
    etag: str
    built_at: float
    # The body compressed once at store time (edge.compress), served to every client that
    # accepts gzip; None when not worth it (and in pages pickled before it existed).
    gzip_body: bytes | None = None

    @classmethod
    def from_response(cls, response: HttpResponse) -> CachedPage:
        body = response.content
        content_type = response.get("Content-Type", "text/html; charset=utf-8")
        return cls(
            body=body,
            content_type=content_type,
            etag=quote_etag(hashlib.sha256(body).hexdigest()[:32]),
            built_at=time.time(),
            gzip_body=gzipped(body, content_type),
        )


# --- Per-process memo in front of the shared cache ------------------------------------
# A hit would otherwise fetch and unpickle the whole body from the shared cache (a
# network round trip with Redis) on every request. Keys carry the version, so a memo
# entry can only be outdated by the clock, and it expires when the shared entry does.

memo: dict[str, tuple[float, CachedPage]] = {}
# The newest good render of each page variant seen by this process, whatever its
# version: what a stale answer falls back to when the shared cache is gone as well.
memo_last: dict[str, CachedPage] = {}


def memo_get(key: str) -> CachedPage | None:
    hit = memo.get(key)
    if hit is None or hit[0] <= time.time():
        return None
    return hit[1]


def memo_put(key: str, page: CachedPage) -> None:
    if len(memo) >= MEMO_MAX_ENTRIES:
        # Oldest first; a racing thread may have removed it already.
        memo.pop(next(iter(memo), ""), None)
    memo[key] = (page.built_at + settings.PUBLIC_CACHE_TTL, page)
    key_name = key.rsplit(":", 1)[0].removeprefix("page:")
    if len(memo_last) >= MEMO_MAX_ENTRIES and key_name not in memo_last:
        memo_last.pop(next(iter(memo_last), ""), None)
    previous = memo_last.get(key_name)
    if previous is None or previous.built_at <= page.built_at:
        memo_last[key_name] = page


# --- Snapshots on disk -------------------------------------------------------------------


def snapshot_dir() -> Path:
    return Path(settings.VAR_DIR) / "snapshots"


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


def snapshots_built() -> dict[str, float]:
    """Each snapshot file on disk -> when its page was built (epoch seconds), from its
    meta file alone (/metrics: how old is what nginx would serve)."""
    built: dict[str, float] = {}
    try:
        metas = sorted(snapshot_dir().glob("*.meta.json"))
    except OSError:
        return built
    for meta in metas:
        try:
            built[meta.name.removesuffix(".meta.json")] = float(json.loads(meta.read_text())["built_at"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return built
