from __future__ import annotations

from tests.outbox.conftest import broker, smtp

__all__ = ["broker", "smtp"]
