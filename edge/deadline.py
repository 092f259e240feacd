"""Time budgets: a client-side bound on every database round trip (a psycopg2 wait
callback: DB_CLIENT_TIMEOUT_MS and the thread's `deadline()`), and `run_with_budget` for
work that may outlive the request that started it. Design: docs/adr/0006-deadlines.md.
"""

from __future__ import annotations

import contextvars
import logging
import select
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

T = TypeVar("T")

_state = threading.local()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Bound every database wait in this thread until the block ends (None: no bound)."""
    previous = getattr(_state, "deadline", None)
    if seconds is not None and seconds > 0:
        at = time.monotonic() + seconds
        _state.deadline = at if previous is None else min(previous, at)
    try:
        yield
    finally:
        _state.deadline = previous


def remaining() -> float | None:
    at = getattr(_state, "deadline", None)
    return None if at is None else at - time.monotonic()


# --- psycopg2: the client-side bound ----------------------------------------------------


def _wait_timeout() -> float | None:
    per_call = settings.DB_CLIENT_TIMEOUT_MS / 1000 if settings.DB_CLIENT_TIMEOUT_MS > 0 else None
    left = remaining()
    if left is None:
        return per_call
    left = max(0.0, left)
    return left if per_call is None else min(per_call, left)


def wait_with_deadline(conn: Any) -> None:
    """psycopg2 wait callback (see psycopg2.extensions.set_wait_callback)."""
    import psycopg2
    from psycopg2 import extensions

    while True:
        state = conn.poll()
        if state == extensions.POLL_OK:
            return
        timeout = _wait_timeout()
        fd = conn.fileno()
        if state == extensions.POLL_READ:
            ready = select.select([fd], [], [], timeout)[0]
        elif state == extensions.POLL_WRITE:
            ready = select.select([], [fd], [], timeout)[1]
        else:  # pragma: no cover - psycopg2 only returns the states above
            raise psycopg2.OperationalError(f"unexpected poll state {state}")
        if not ready:
            # psycopg2 closes a connection whose wait callback raised (its state is
            # unknown): Django sees it closed and reconnects on the next request.
            raise psycopg2.OperationalError(
                f"database did not answer within {timeout:.3f} s (client-side deadline)"
            )


def install_client_timeout() -> bool:
    """Install the wait callback when the default database is PostgreSQL (psycopg2)."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        return False
    try:
        from psycopg2 import extensions
    except ImportError:  # pragma: no cover - psycopg (3) has its own timeouts
        return False
    extensions.set_wait_callback(wait_with_deadline)
    return True


# --- Work that may outlive its request ----------------------------------------------------


def must_stay_in_thread() -> bool:
    """True when another thread, with a connection of its own, would not see this thread's
    data: inside atomic() (uncommitted rows; tests run so), or an in-memory SQLite
    database (one per connection)."""
    for conn in connections.all():
        if conn.in_atomic_block:
            return True
        if conn.vendor == "sqlite" and conn.is_in_memory_db():  # type: ignore[attr-defined]
            return True
    return False


def start_in_background(fn: Callable[[], T], *, name: str, max_seconds: float) -> Future[T]:
    """Run `fn` in a fresh daemon thread under a deadline; its connections close after."""
    future: Future[T] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            with deadline(max_seconds):
                result = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            future.set_exception(exc)
        else:
            future.set_result(result)
        finally:
            # A thread of its own has connections of its own: never leave them open.
            connections.close_all()

    # In a copy of the caller's context: the request's id and whether it is a public read
    # (edge/replica.py) hold for the work it hands over.
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(run,), name=f"rebuild:{name}", daemon=True).start()
    return future


def run_with_budget(
    fn: Callable[[], T], *, name: str, budget: float, max_seconds: float
) -> tuple[Future[T], bool]:
    """Start `fn` and wait up to `budget` seconds. Returns (future, done).

    Inside a transaction (tests, or a caller that holds one) the work runs inline: a
    thread with another connection would not see the transaction's rows.
    """
    if budget <= 0 or must_stay_in_thread():
        future: Future[T] = Future()
        try:
            future.set_result(fn())
        except Exception as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future, True
    future = start_in_background(fn, name=name, max_seconds=max_seconds)
    try:
        future.exception(timeout=budget)
    except TimeoutError:
        return future, False
    return future, True
