"""The display time zone (settings.DISPLAY_TIME_ZONE): the zone pages, emails, the
console and insights show times in, and what "today" means for people."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import wraps
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

F = TypeVar("F", bound=Callable[..., Any])


def display_zone() -> ZoneInfo:
    # Read on every call, not at import: a settings change (tests do it) takes effect.
    return ZoneInfo(settings.DISPLAY_TIME_ZONE)


@contextmanager
def display_zone_active() -> Iterator[None]:
    """Activate the display zone for the block (template filters, form fields)."""
    with timezone.override(display_zone()):
        yield


def in_display_zone(view: F) -> F:
    """Run a view with the display zone active."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with display_zone_active():
            return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def format_local(value: datetime) -> str:
    """A time as messages name it: in the display zone, with the zone's name
    ("2026-10-08 01:10 CEST"), so a message never makes staff convert from UTC."""
    local = value.astimezone(display_zone())
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"
