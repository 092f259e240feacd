"""The display time zone (settings.DISPLAY_TIME_ZONE): the zone pages, emails, the
console and insights show times in, and what "today" means for people."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import cache, wraps
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

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


# The regions of IANA's geographic zone names ("Europe/Paris"). Left out: the legacy
# aliases of another era ("US/Pacific", "GB", "Canada/Eastern") and the POSIX offsets
# (`Etc/GMT+5` is UTC-5: their signs read backwards).
ZONE_REGIONS = (
    "Africa",
    "America",
    "Antarctica",
    "Asia",
    "Atlantic",
    "Australia",
    "Europe",
    "Indian",
    "Pacific",
)


@cache
def _geographic_zones() -> tuple[str, ...]:
    return tuple(sorted(z for z in available_timezones() if z.split("/", 1)[0] in ZONE_REGIONS))


def zone_names() -> list[str]:
    """The zones a person may choose: IANA's geographic names, UTC, and the display zone
    (whatever it is called: it is the default of every choice)."""
    return sorted({*_geographic_zones(), "UTC", settings.DISPLAY_TIME_ZONE})


def clean_zone(value: str | None, *, field: str = "time_zone") -> str:
    """One of `zone_names()`; anything else is a field error."""
    if value not in zone_names():
        raise ValidationError({field: _("Choose a time zone from the list.")})
    return value
