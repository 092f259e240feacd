"""Strict JSON types for request bodies (api.serializers.StrictSerializer uses it).

DRF coerces: `"title": 123` becomes "123", `"is_public": "false"` becomes False, `1`
becomes True, and a date-time without a zone is silently taken in the server's zone.
A client that sends the wrong type has a bug it should hear about, so each of these is a
400 naming the field, checked once here for every field of every input serializer:

- text fields (CharField and its kinds) take JSON strings only;
- booleans take `true` / `false` only;
- whole numbers take JSON numbers only (not strings, not booleans);
- date-times take ISO 8601 strings with a zone (`Z` or an offset); dates take strings.

`null` is left to the field (`allow_null` decides). Choice, relation and decimal fields
keep DRF's parsing: their values are looked up or parsed from strings by design.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from rest_framework import serializers

STRING = "Must be a string."
BOOLEAN = "Must be true or false (a JSON boolean, not a string or a number)."
INTEGER = "Must be a whole number (a JSON number, not a string)."
NUMBER = "Must be a number (a JSON number, not a string)."
DATETIME = "Must be a date-time string (ISO 8601, e.g. 2026-10-09T11:05:00Z)."
NAIVE_DATETIME = "Must include a time zone (`Z` or an offset such as `+02:00`)."
DATE = "Must be a date string (YYYY-MM-DD)."


def _whole(value: Any) -> str | None:
    # JSON Schema's integer includes 204.0; DRF makes it 204.
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return None if whole and not isinstance(value, bool) else INTEGER


def _number(value: Any) -> str | None:
    return None if isinstance(value, int | float) and not isinstance(value, bool) else NUMBER


# Field class -> the check of a sent value's JSON type; the first match wins, so the more
# specific classes come first (a ChoiceField's own parsing names its error).
_CHECKS: tuple[tuple[type | tuple[type, ...], Callable[[Any], str | None]], ...] = (
    (serializers.BooleanField, lambda v: None if isinstance(v, bool) else BOOLEAN),
    ((serializers.ChoiceField, serializers.DecimalField, serializers.RelatedField), lambda v: None),
    (serializers.CharField, lambda v: None if isinstance(v, str) else STRING),
    (serializers.IntegerField, _whole),
    (serializers.FloatField, _number),
    (serializers.DateTimeField, lambda v: _datetime_problem(v)),
    (serializers.DateField, lambda v: None if isinstance(v, str | date) else DATE),
)


def wrong_type(field: serializers.Field, value: Any) -> Any:
    """What is wrong with the JSON type of `value` for `field`: a message, a dict of
    them by list index, or None when the type is right."""
    if value is None:
        return None
    for kinds, check in _CHECKS:
        if isinstance(field, kinds):
            return check(value)
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        items = {index: wrong_type(field.child, item) for index, item in enumerate(value)}
        return {index: [message] for index, message in items.items() if message} or None
    return None


def _datetime_problem(value: Any) -> str | None:
    if isinstance(value, datetime):
        return NAIVE_DATETIME if value.tzinfo is None else None
    if not isinstance(value, str):
        return DATETIME
    try:
        parsed = parse_datetime(value.strip())
    except ValueError:
        return None  # out of range: the field says so in its own words
    if parsed is not None and parsed.tzinfo is None:
        return NAIVE_DATETIME
    return None  # well-typed; an unparsable string is the field's own error


def type_errors(fields: dict[str, serializers.Field], data: dict[str, Any]) -> dict[str, Any]:
    """Every writable field whose sent value has the wrong JSON type, with the reason."""
    errors: dict[str, Any] = {}
    for name, field in fields.items():
        if field.read_only or name not in data:
            continue
        problem = wrong_type(field, data[name])
        if isinstance(problem, str):
            errors[name] = [problem]
        elif problem:
            errors[name] = problem
    return errors
