"""Languages: which ones a person may choose, and how emails write times and numbers.

A subscriber's or a customer's `language` decides the language of what is sent to them
(their emails are rendered under `translation.override(language)`); the pages follow the
visitor's request instead. The formats below are translatable strings, so the English
output stays what it always was and each catalogue says how its language writes a time.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import dateformat, formats
from django.utils.translation import gettext, pgettext

# The choices of every `language` field and API parameter (one named enum in the schema).
LANGUAGE_CHOICES = settings.LANGUAGES


def language_codes() -> list[str]:
    return [code for code, _name in settings.LANGUAGES]


def default_language() -> str:
    return settings.LANGUAGE_CODE


def clean_language(value: str | None, *, field: str = "language") -> str:
    """One of settings.LANGUAGES; anything else is a field error naming the choices."""
    codes = language_codes()
    if value not in codes:
        raise ValidationError({field: f"Choose one of these languages: {', '.join(codes)}."})
    return value


def supported_language(value: str | None) -> str:
    """The active language (or any code) brought to one of settings.LANGUAGES: "fr-ca"
    becomes "fr", an unknown one the default. For stamping a new subscriber from a
    request, where refusing would be the wrong answer."""
    code = (value or "").lower()
    codes = language_codes()
    if code in codes:
        return code
    base = code.split("-", 1)[0]
    return base if base in codes else default_language()


def first_of_month(pattern: str, day: int) -> str:
    """A Django date format for a given day of the month: the first is "1er" in French
    ("1er déc. 2026"), plain elsewhere; every other day is unchanged."""
    if day != 1:
        return pattern
    # Translators: the first day of a month, in Django's date format syntax: "j" is the
    # day's number; escape literal letters with a backslash ("j\\e\\r" gives "1er").
    return pattern.replace("j", pgettext("the first day of a month", "j"), 1)


def display_datetime(value: datetime | None, zone: str | ZoneInfo) -> str:
    """A time in `zone` in the active language, with the zone named (emails have no
    <time> element): "2026-12-02 14:05 UTC", "2 déc. 2026 à 14:05 UTC"."""
    if value is None:
        return ""
    tz = zone if isinstance(zone, ZoneInfo) else ZoneInfo(zone)
    local = value.astimezone(tz)
    # Translators: a date and time in an email, in Django's date format syntax
    # (https://docs.djangoproject.com/en/stable/ref/templates/builtins/#date); escape
    # literal letters with a backslash. The zone's name follows it.
    pattern = first_of_month(pgettext("email datetime format", "Y-m-d H:i"), local.day)
    return f"{dateformat.format(local, pattern)} {local.tzname()}"


def display_date(value: object) -> str:
    """A calendar date in an email, in the active language: "2026-12-02", "2 déc. 2026"."""
    if value is None:
        return ""
    # Translators: a date in an email, in Django's date format syntax.
    pattern = first_of_month(pgettext("email date format", "Y-m-d"), value.day)  # type: ignore[attr-defined]
    return dateformat.format(value, pattern)  # type: ignore[arg-type]


def month_label(value: object) -> str:
    """ "December 2026", "décembre 2026"."""
    # Translators: a month and its year, in Django's date format syntax.
    return dateformat.format(value, pgettext("email month format", "F Y"))  # type: ignore[arg-type]


def number(value: Decimal | int | float | str) -> str:
    """A number as the active language writes it ("99.95", "99,95"), without grouping;
    a Decimal keeps the digits it has (the caller rounds or normalises)."""
    text = format(value, "f") if isinstance(value, Decimal) else str(value)
    return formats.number_format(text)


def percent(value: Decimal | int | float | str) -> str:
    """ "99.95%" in English, "99,95 %" in French (a no-break space before the sign)."""
    return gettext("%(number)s%%") % {"number": number(value)}
