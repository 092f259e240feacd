from __future__ import annotations

from tests.outbox.conftest import broker, outbox_redis_url

__all__ = ["broker", "outbox_redis_url"]
