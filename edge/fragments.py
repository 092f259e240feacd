"""Cached fragments of a page: pieces of HTML kept under keys that name everything they
show, so that a page is assembled from the pieces that did not change and rebuilds only
the others. A key is never invalidated: what changed makes a new key (a product's
public version, the day, the language...) and the old entry expires unused.
Design: docs/adr/0015-page-fragments.md.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Sequence

from django.utils.safestring import SafeString, mark_safe

from edge.shared_cache import pages_cache

# A key names the local day it was built for, so an entry is useless after a day or so.
FRAGMENT_TTL = 26 * 3600
KEY_VERSION = "2"  # bumped when the fragments' HTML changes shape (a deploy)


def fragment_key(kind: str, *parts: object) -> str:
    """The cache key of a fragment of `kind` showing `parts` (anything with a stable repr)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()
    return f"frag:{KEY_VERSION}:{kind}:{digest}"


def fragments(keys: Sequence[str], build: Callable[[list[int]], list[str]]) -> list[SafeString]:
    """The fragment of each key: from the cache, or built by `build(indexes of the missing
    keys)` (one call for all of them, in that order) and stored. A cache that fails is a
    miss: the fragments are built, never refused."""
    store = pages_cache()
    try:
        found = store.get_many(list(keys))
    except Exception:  # noqa: BLE001 - the cache is optional for correctness
        found = {}
    missing = [i for i, key in enumerate(keys) if key not in found]
    if missing:
        built = build(missing)
        fresh = {keys[i]: str(html) for i, html in zip(missing, built, strict=True)}
        found.update(fresh)
        with contextlib.suppress(Exception):  # unstored, they are built again next time
            store.set_many(fresh, timeout=FRAGMENT_TTL)
    # Only HTML this project rendered from its templates is ever stored under these keys.
    return [mark_safe(found[key]) for key in keys]  # noqa: S308
