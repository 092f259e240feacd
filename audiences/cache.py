"""The private page cache: one entry per page, language (or JSON part) and state.

The key carries the page's own change time, this room's write counter (pages, keys,
words), the public-state version and the private-state version (every incident write,
those the public never sees included), so a change shows on the next request; a short
lifetime covers what none of them announces.
Entries live under their own prefix in the default cache, never in the public page
cache, so no public response can be served from them (docs/adr/0028-audience-pages.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache import cache

from audiences.models import WORDS_VERSION_KEY, Page
from edge.version import private_state_version, public_state_version

TTL_SECONDS = 30


def _key(page: Page, variant: str) -> str:
    words = cache.get(WORDS_VERSION_KEY, 0)
    stamps = f"{public_state_version()}:{private_state_version()}"
    return f"audiences:page:{page.pk}:{page.updated_at.timestamp()}:{words}:{stamps}:{variant}"


def cached(*, page: Page, variant: str, build: Callable[[], bytes]) -> bytes:
    key = _key(page, variant)
    body = cache.get(key)
    if body is None:
        body = build()
        cache.set(key, body, TTL_SECONDS)
    return bytes(body)


def cached_data(*, page: Page, variant: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    key = _key(page, variant)
    data = cache.get(key)
    if data is None:
        data = build()
        cache.set(key, data, TTL_SECONDS)
    return dict(data)
