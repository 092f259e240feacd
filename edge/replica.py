"""Public reads from a PostgreSQL streaming replica, writes and everything else on the primary.

A request is a *public read* when `PublicReadMiddleware` says so: a GET or HEAD, by a
visitor who is not signed in, of a view marked `public_read` (every `public_page` view,
that is the public pages, feeds, badges and cached API reads). The middleware holds a
`ReadState` in a context variable for the request; `ReplicaRouter` sends that request's
reads to the "replica" alias while the replica is healthy, and everything else (writes,
reads after a write in the same request, reads inside a transaction, staff pages, the
console, the admin) to the primary. A replica that lags more than
DATABASE_REPLICA_MAX_LAG seconds or cannot be reached is left alone until the next check
(at most every DATABASE_REPLICA_CHECK_INTERVAL seconds): its reads go to the primary.
The router is installed only when DATABASE_REPLICA_URL is set (statuspage/settings_replica.py).
Design: docs/adr/0025-replica.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

REPLICA = "replica"

# Seconds the replica's replayed state is behind what it has received (0 when it has
# replayed all it received), and whether it is a standby at all (a promoted or wrongly
# configured server is not read from: it may have diverged from the primary).
LAG_SQL = (
    "SELECT pg_is_in_recovery(), CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() "
    "THEN 0 ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END"
)


@dataclass
class ReadState:
    """What one request may read from the replica (set by the middleware)."""

    public: bool = False
    wrote: bool = False  # after a write, the request reads its own writes on the primary


_state: ContextVar[ReadState | None] = ContextVar("replica_read_state", default=None)


@contextmanager
def public_read() -> Iterator[ReadState]:
    """Mark the work inside as a public read (the middleware's scope; tasks and tests)."""
    state = ReadState(public=True)
    token = _state.set(state)
    try:
        yield state
    finally:
        _state.reset(token)


@dataclass
class Verdict:
    usable: bool
    lag: float | None  # seconds, None when unknown (unreachable, not a standby)
    checked_at: float


class ReplicaHealth:
    """Whether the replica may be read from; probed at most every check interval.

    One thread probes while the others keep the previous verdict, so a slow replica
    costs one request per interval, not every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.verdict = Verdict(usable=False, lag=None, checked_at=float("-inf"))
        self.probing = False

    def reset(self) -> None:
        with self._lock:
            self.verdict = Verdict(usable=False, lag=None, checked_at=float("-inf"))
            self.probing = False

    def usable(self) -> bool:
        now = time.monotonic()
        with self._lock:
            fresh = now - self.verdict.checked_at < settings.DATABASE_REPLICA_CHECK_INTERVAL
            if fresh or self.probing:
                return self.verdict.usable
            self.probing = True
        try:
            verdict = self._probe(now)
        finally:
            with self._lock:
                self.probing = False
        with self._lock:
            self.verdict = verdict
        return verdict.usable

    def mark_lost(self) -> None:
        """The replica failed under a request: the primary serves until the next check."""
        with self._lock:
            self.verdict = Verdict(usable=False, lag=None, checked_at=time.monotonic())

    def _probe(self, now: float) -> Verdict:
        conn = connections[REPLICA]
        try:
            with conn.cursor() as cursor:
                cursor.execute(LAG_SQL)
                in_recovery, lag = cursor.fetchone()
        except DatabaseError as exc:
            logger.warning("replica unreachable, reading from the primary: %s", exc)
            conn.close()
            return Verdict(usable=False, lag=None, checked_at=now)
        if not in_recovery:
            logger.warning("replica is not a standby (promoted?): reading from the primary")
            return Verdict(usable=False, lag=None, checked_at=now)
        lag_seconds = None if lag is None else float(lag)
        usable = lag_seconds is not None and lag_seconds <= settings.DATABASE_REPLICA_MAX_LAG
        if not usable:
            logger.warning("replica lags %s s, reading from the primary", lag_seconds)
        return Verdict(usable=usable, lag=lag_seconds, checked_at=now)


health = ReplicaHealth()


def _connection_ok() -> bool:
    """Make sure this thread's replica connection works before a query is sent to it:
    a dead one is replaced (Django's health check, once per request), and a replica
    that refuses is marked lost so that the request reads from the primary."""
    conn = connections[REPLICA]
    try:
        conn.close_if_health_check_failed()
        conn.ensure_connection()
    except DatabaseError as exc:
        logger.warning("replica connection failed, reading from the primary: %s", exc)
        conn.close()
        health.mark_lost()
        return False
    return True


class ReplicaRouter:
    """Django database router: public reads to the replica, all else to the primary."""

    def db_for_read(self, model: type, **hints: Any) -> str | None:
        state = _state.get()
        if state is None or not state.public or state.wrote:
            return None
        if connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return None  # the transaction's own rows are on the primary
        if not health.usable() or not _connection_ok():
            return None
        return REPLICA

    def db_for_write(self, model: type, **hints: Any) -> str | None:
        state = _state.get()
        if state is not None:
            state.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # Both aliases hold the same rows.
        aliases = {DEFAULT_DB_ALIAS, REPLICA}
        if obj1._state.db in aliases and obj2._state.db in aliases:
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db == REPLICA else None


class PublicReadMiddleware:
    """Decide whether a request is a public read (after authentication, before the view)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _state.set(ReadState())
        try:
            return self.get_response(request)
        finally:
            _state.reset(token)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: object,
        view_kwargs: object,
    ) -> None:
        state = _state.get()
        if (
            state is not None
            and request.method in ("GET", "HEAD")
            and getattr(view_func, "public_read", False)
            and not request.user.is_authenticated
        ):
            state.public = True
