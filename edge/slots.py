"""The per-process limit on concurrent rebuilds (PUBLIC_MAX_REBUILDS): misses past it are
shed (older copy or 503), hits are always served."""

from __future__ import annotations

import threading

from django.conf import settings


class RebuildSlots:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken = 0

    def take(self) -> bool:
        with self._lock:
            if self._taken >= settings.PUBLIC_MAX_REBUILDS:
                return False
            self._taken += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._taken = max(0, self._taken - 1)

    def reset(self) -> None:
        with self._lock:
            self._taken = 0


rebuilds = RebuildSlots()
