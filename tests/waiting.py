"""The one way tests wait: poll for a positive signal, or fail saying what never came.

Never sleep to prove that something did not happen: make something observable happen
after it (a marker task processed by the same worker, a later state) and then assert the
absence. Timeouts here are generous on purpose; they only bound a failing test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT = 45.0


def poll(
    probe: Callable[[], T | None], *, timeout: float = DEFAULT_TIMEOUT, interval: float = 0.05
) -> T | None:
    """The first truthy value `probe` returns within `timeout`, else its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_for(
    predicate: Callable[[], T | None],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = 0.05,
    message: str | Callable[[], str] = "",
) -> T:
    """Poll `predicate` until it is truthy and return its value; fail with `message`
    (a string, or a callable for costly diagnostics such as a worker's log) otherwise."""
    value = poll(predicate, timeout=timeout, interval=interval)
    if not value:
        detail = message() if callable(message) else message
        raise AssertionError(
            f"not within {timeout:g} s: {getattr(predicate, '__name__', predicate)}\n{detail}"
        )
    return value
