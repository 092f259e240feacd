"""Text and value rules every room shares: what a value may contain, how long, when.

The services call these, so the admin, the API, the console and the commands refuse the
same values with the same messages. Anything they let through must render on every
public page and feed: XML (the feeds) cannot carry most control characters at all, and a
year-1 date overflows the arithmetic of the history grid.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

# C0 controls (except tab), DEL and C1 controls. A title or name ends up in email
# subjects and headers, so CR/LF there must never get through. U+2028/U+2029 are line
# breaks too (str.splitlines() splits on them), so they are refused with the rest.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
# In multi-line text, tab and newline are kept; every other control character (and the
# noncharacters XML refuses) is removed rather than refused: it is invisible, usually
# pasted from a terminal, and the staff member meant the text around it.
_TEXT_STRIP = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff]")

# Every multi-line field (Markdown bodies, notes, descriptions) is at most this long, in
# characters. 64 KB is a long postmortem; the Markdown renderer is also bounded by it.
TEXT_MAX_LENGTH = 65536

# Times a write may carry: nothing before 1970 (no status page has history older than
# Unix time, and year 1 overflowed the grid arithmetic), nothing further ahead than a
# scheduled maintenance can reasonably be planned.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
SCHEDULE_HORIZON = timedelta(days=5 * 366)
# Clock skew allowed on times that must be "now or earlier" (an incident start, a
# resolution): a staff laptop a few minutes fast must not be refused.
CLOCK_SKEW = timedelta(minutes=5)


def clean_single_line(value: str, *, field: str, max_length: int = 200) -> str:
    """Strip surrounding space and refuse control characters and overlong values."""
    value = (value or "").strip()
    if not value:
        raise ValidationError({field: _("This field is required.")})
    if CONTROL_CHARS.search(value):
        raise ValidationError({field: _("Line breaks and control characters are not allowed.")})
    if len(value) > max_length:
        raise ValidationError({field: _("At most %(max)d characters.") % {"max": max_length}})
    return value


_VOWEL_START = re.compile(r"[aeiouyàâäéèêëîïôöùûüÿæœ]", re.IGNORECASE)


def site_title(site_name: str) -> str:
    """What pages and emails call the status page: "Acme status", but "Acme Status" (not
    "Acme Status status") when the configured name already says so."""
    name = (site_name or "").strip()
    if re.search(r"\bstatus\b", name, flags=re.IGNORECASE):
        return name
    if _VOWEL_START.match(name):
        # French elides before a vowel: "État d’Acme", but "État de Google".
        return pgettext("site title, the name starting with a vowel", "%(name)s status") % {"name": name}
    return _("%(name)s status") % {"name": name}


def clean_text(value: str | None, *, field: str, max_length: int = TEXT_MAX_LENGTH) -> str:
    """Multi-line text: CRLF to LF, invisible control characters removed, length bounded."""
    value = (value or "").replace("\r\n", "\n").replace("\r", "\n")
    value = _TEXT_STRIP.sub("", value)
    if len(value) > max_length:
        raise ValidationError(
            {
                field: _("At most %(max)d characters (this has %(length)d).")
                % {"max": max_length, "length": len(value)}
            }
        )
    return value


def check_time(value: datetime | None, *, field: str, future: timedelta | None = SCHEDULE_HORIZON) -> None:
    """Refuse naive times, times before 1970, and times more than `future` from now.

    `future=CLOCK_SKEW` is for times that must already have happened (a start, a
    resolution); the default allows planned times (maintenance windows).
    """
    if value is None:
        return
    if timezone.is_naive(value):
        raise ValidationError({field: _("A time zone is required.")})
    if value < EARLIEST:
        raise ValidationError({field: _("Times before 1970 are not accepted.")})
    if future is not None and value > timezone.now() + future:
        if future <= CLOCK_SKEW:
            raise ValidationError({field: _("This time cannot be in the future.")})
        raise ValidationError({field: _("This time is too far in the future.")})


def check_range(value: int | None, *, field: str, low: int, high: int) -> None:
    """An integer within [low, high]; anything else is a field error, never an overflow."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(
            {field: _("Must be a whole number from %(low)d to %(high)d.") % {"low": low, "high": high}}
        )
