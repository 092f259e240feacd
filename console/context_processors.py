"""What the console's header shows on every page built on console/base.html (the
console, insights, API keys): its mark follows the public page's status, from the same
rollup the status page uses (incidents.selectors.status_summary), so it is never a green
check while an incident is open.

Cheap: lazy (read only by a template that shows it), and cached per public-state
version, which every public write changes; a time-driven change (a window starting on
its own) shows within STATUS_TTL seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache

from django.core.cache import cache as shared_cache
from django.http import HttpRequest
from django.utils import timezone

from edge.version import public_state_version
from incidents.selectors import INDICATOR_DESCRIPTIONS, PageStatus, status_summary

logger = logging.getLogger(__name__)

STATUS_TTL = 60


def _indicator() -> str:
    key = f"console-page-status:{public_state_version()}"
    try:
        indicator = shared_cache.get(key)
    except Exception:  # noqa: BLE001 - the cache is away: read the database instead
        indicator = None
    if indicator not in INDICATOR_DESCRIPTIONS:
        indicator = status_summary(now=timezone.now()).banner.indicator
        try:
            shared_cache.set(key, indicator, timeout=STATUS_TTL)
        except Exception:  # noqa: BLE001 - the next page reads the database again
            logger.debug("console page status not cached")
    return str(indicator)


def page_status(request: HttpRequest) -> dict[str, Callable[[], PageStatus]]:
    @cache
    def status() -> PageStatus:
        indicator = _indicator()
        return PageStatus(indicator=indicator, description=INDICATOR_DESCRIPTIONS[indicator])

    return {"CONSOLE_PAGE_STATUS": status}
