"""Render problems: what the public could not be shown, recorded for staff.

Where a public read catches a render failure and degrades (the page cache's last good
copy, a cached API read's older answer, a feed entry reduced to its title), it calls
`render_problem_record`; the console's Now page and the admin list the rows. When the
same page or entry renders fine again, `render_problem_clear` deletes its row.

A good render happens on every rebuild, so clearing must cost nothing while there is
nothing to clear: a marker per kind in the shared cache says "some problems of this kind
may be open", and only then does a good render touch the database. Recording sets the
marker; the Now page re-sets it whenever it lists rows (a marker lost with the cache
comes back the next time staff look), and clearing drops it once no row is left.

Recording and clearing never raise: they run on the public path, which must answer
whatever happens to this bookkeeping.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from edge.models import RenderProblem
from edge.shared_cache import cache_delete, cache_get, cache_set

logger = logging.getLogger(__name__)

Kind = RenderProblem.Kind
MARKER_TTL = 7 * 86400
ERROR_MAX_CHARS = 2000


def _marker(kind: str) -> str:
    return f"render-problems-open:{kind}"


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text[:ERROR_MAX_CHARS]


def render_problem_record(*, kind: str, key: str, label: str, error: BaseException) -> None:
    """Count one failure of `key` (created on the first, updated after)."""
    now = timezone.now()
    description = _describe(error)
    label = label[:300]
    key = key[:200]
    try:
        for _attempt in range(2):
            with transaction.atomic():
                updated = RenderProblem.objects.filter(kind=kind, key=key).update(
                    count=F("count") + 1, last_seen_at=now, error=description, label=label
                )
                if updated:
                    break
                try:
                    with transaction.atomic():
                        RenderProblem.objects.create(
                            kind=kind,
                            key=key,
                            label=label,
                            error=description,
                            first_seen_at=now,
                            last_seen_at=now,
                        )
                    break
                except IntegrityError:
                    continue  # another process created it meanwhile: count on it
    except DatabaseError:
        logger.warning("could not record the render problem of %s %s", kind, key, exc_info=True)
        return
    cache_set(_marker(kind), True, MARKER_TTL)


def render_problem_clear(*, kind: str, keys: list[str]) -> None:
    """`keys` rendered fine: their problems, if any, are over."""
    if not keys or not cache_get(_marker(kind)):
        return
    try:
        RenderProblem.objects.filter(kind=kind, key__in=keys).delete()
        if not RenderProblem.objects.filter(kind=kind).exists():
            cache_delete(_marker(kind))
    except DatabaseError:
        logger.warning("could not clear render problems of %s", kind, exc_info=True)


def render_problems_open() -> list[RenderProblem]:
    """Every open problem, newest first (the console's Now page and the admin)."""
    problems = list(RenderProblem.objects.order_by("-last_seen_at")[:50])
    for kind in {problem.kind for problem in problems}:
        cache_set(_marker(kind), True, MARKER_TTL)
    return problems
