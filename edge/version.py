"""The public-state version stamp: bumped after every public write commits; cached
public renders are keyed by it, so a change shows on the next request. It lives in the
shared cache and in one database row (read at most every PUBLIC_STATE_DB_POLL seconds
while the cache is away). Failures never reach writers or readers; a bump lost after its
write committed is re-applied by the sweep (PendingBump, PUBLIC_STATE_SWEEP_SECONDS).
Design: docs/adr/0003-page-cache.md.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from django.core.cache import cache
from django.db import transaction

from edge.deadline import deadline

logger = logging.getLogger(__name__)

VERSION_KEY = "public-state-version"
# Moved by every incident write, shown publicly or not: the private pages' caches are
# keyed by it (a write only staff-only readers see must not move the public stamp).
PRIVATE_VERSION_KEY = "private-state-version"
# A read of the stamp row in a request thread must not hold it: this bound is far below
# any page budget, and the previous stamp is served when it is hit.
DB_READ_BUDGET = 0.2

_lock = threading.Lock()
_polled_at = float("-inf")  # when this process last read the row (cache unreachable)
_known: str | None = None  # the newest stamp this process has seen
_cache_missed = False  # the cache was unreachable since this process last read it
# Called with each new stamp once it is stored (edge.apps: the prerender).
bumped: list[Callable[[str], None]] = []


def reset() -> None:
    """Forget what this process knows about the stamp (tests)."""
    global _polled_at, _known, _cache_missed
    with _lock:
        _polled_at, _known, _cache_missed = float("-inf"), None, False


def new_version() -> str:
    """A time-based stamp, not a counter: after the cache is flushed or restarted the next
    stamp is still new, so nothing stale can match it. 16 hex digits of nanoseconds (read
    back by http_cache.version_time for Last-Modified), then random bits, so two stamps
    made in the same nanosecond (or under a frozen test clock) still differ."""
    return f"{time.time_ns():016x}{secrets.randbits(32):08x}"


def _db_write(version: str) -> bool:
    from edge.models import PublicStateStamp

    try:
        with deadline(DB_READ_BUDGET * 5):
            if not PublicStateStamp.objects.filter(pk=1).update(version=version):
                PublicStateStamp.objects.get_or_create(pk=1, defaults={"version": version})
    except Exception:  # noqa: BLE001 - the pending row makes the sweep bump again
        logger.warning("could not store the public state version in the database")
        return False
    return True


def _db_read() -> str | None:
    from edge.models import PublicStateStamp

    try:
        with deadline(DB_READ_BUDGET):
            return PublicStateStamp.objects.filter(pk=1).values_list("version", flat=True).first()
    except Exception:  # noqa: BLE001 - database down or slow too: keep the stamp we had
        return None


def _remember(version: str) -> str:
    global _known
    if _known is None or version > _known:
        _known = version
    return version


def _bump(pending: list[int] | None = None) -> bool:
    """A new stamp, stored in the row and the cache; the `pending` rows it answers for are
    deleted once both took it. Whether both did."""
    global _cache_missed
    version = new_version()
    stored = _db_write(version)
    _remember(version)
    try:
        cache.set(VERSION_KEY, version, timeout=None)
    except Exception:  # noqa: BLE001 - readers fall back to the database row
        _cache_missed = True
        stored = False
    if stored and pending:
        _pending_delete(pending)
    for listener in bumped:
        try:
            listener(version)
        except Exception:  # never the writer's problem
            logger.warning("a listener of the public state version failed", exc_info=True)
    return stored


def _pending_delete(pks: list[int]) -> None:
    from edge.models import PendingBump

    try:
        with deadline(DB_READ_BUDGET * 5):
            PendingBump.objects.filter(pk__in=pks).delete()
    except Exception:  # noqa: BLE001 - left for the sweep, which only bumps once more
        logger.warning("could not clear a pending public state bump")


class _QueuedBump:
    """The bump queued on commit for one transaction, with its pending row."""

    def __init__(self, pending: int) -> None:
        self.pending = pending

    def __call__(self) -> None:
        _bump([self.pending])


def public_state_changed() -> None:
    """Call inside a service's transaction; the bump happens once it commits, once per
    transaction however many writes in it call this (a bump already queued at this
    savepoint level or an outer one survives whatever this one survives). A PendingBump
    row written in the same transaction outlives a bump that is lost after the commit."""
    from edge.models import PendingBump

    connection = transaction.get_connection()
    current = set(connection.savepoint_ids)
    for sids, func, *_ in connection.run_on_commit:
        if isinstance(func, _QueuedBump) and set(sids) <= current:
            return
    transaction.on_commit(_QueuedBump(PendingBump.objects.create().pk))


def sweep_pending_bumps(*, older_than: float) -> int:
    """Bump once for the writes whose bump is not known to have landed `older_than`
    seconds after their commit (the periodic task, PUBLIC_STATE_SWEEP_SECONDS); how many
    it answered for (0 when the bump could not be stored: they stay for the next sweep)."""
    from django.utils import timezone

    from edge.models import PendingBump

    since = timezone.now() - timedelta(seconds=older_than)
    pks = list(PendingBump.objects.filter(created_at__lte=since).values_list("pk", flat=True)[:10_000])
    if not pks:
        return 0
    logger.warning("re-applying %d lost public state bumps", len(pks))
    return len(pks) if _bump(pks) else 0


def _private_bump() -> None:
    try:
        try:
            cache.incr(PRIVATE_VERSION_KEY)
        except ValueError:  # not there yet (or flushed): any new value is a change
            cache.set(PRIVATE_VERSION_KEY, time.time_ns(), timeout=None)
    except Exception:  # noqa: BLE001 - private pages expire on their own (30 s)
        logger.warning("could not move the private state version")


def private_state_changed() -> None:
    """Call inside a service's transaction for any write private pages may show; once
    per transaction, after it commits."""
    connection = transaction.get_connection()
    current = set(connection.savepoint_ids)
    for sids, func, *_ in connection.run_on_commit:
        if func is _private_bump and set(sids) <= current:
            return
    transaction.on_commit(_private_bump)


def private_state_version() -> str:
    try:
        return str(cache.get(PRIVATE_VERSION_KEY, "0"))
    except Exception:  # noqa: BLE001 - the breaker in the cache backend has logged it
        return "unavailable"


def _without_cache() -> str:
    """The stamp while the cache is unreachable: the database row, polled per process."""
    global _polled_at, _cache_missed
    with _lock:
        _cache_missed = True
        due = time.monotonic() - _polled_at >= _poll_interval()
        if due:
            _polled_at = time.monotonic()  # one reader per interval; the others use _known
    if due:
        row = _db_read()
        if row is not None:
            # Stamps are times: a row newer than the stamp we last saw in the cache is a
            # change made since (perhaps one that could not reach the cache). An older
            # row only means the cache minted a stamp after a flush: keep ours, and the
            # pages cached under it stay valid.
            _remember(row)
    return _known or "unavailable"


def _poll_interval() -> float:
    from django.conf import settings

    return float(settings.PUBLIC_STATE_DB_POLL)


def public_state_version() -> str:
    global _cache_missed
    try:
        version = cache.get(VERSION_KEY)
        if _cache_missed and version is not None:
            # The cache is back. Bumps made while it was away reached only the row: the
            # newer of the two wins, so no page keyed by an old stamp is served as fresh.
            _cache_missed = False
            row = _db_read()
            if row is not None and row > str(version):
                cache.set(VERSION_KEY, row, timeout=None)
                version = row
        if version is None:
            # Flushed, evicted or a new cache: a fresh stamp can only be newer than any
            # page cached before, so nothing stale matches it. The row keeps the last
            # change's stamp, which is all a reader without the cache needs.
            version = new_version()
            cache.add(VERSION_KEY, version, timeout=None)
            version = cache.get(VERSION_KEY) or version
        return _remember(str(version))
    except Exception:  # noqa: BLE001 - the breaker in the cache backend has logged it
        return _without_cache()
