"""Forget the edge's per-process state (tests): the backoff, the rebuild slots and the
local fallback of the shared cache."""

from __future__ import annotations

from edge.backoff import database
from edge.shared_cache import local_fallback
from edge.slots import rebuilds


def reset() -> None:
    database.reset()
    rebuilds.reset()
    local_fallback.clear()
