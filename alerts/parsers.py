"""Vendor payloads to normalised alert events. Pure: no ORM, no settings, no clock.

Each parser takes the decoded JSON body (Alertmanager v4, Grafana v1, or our generic
JSON) and returns its alerts as `AlertEvent`s, or raises `PayloadError` with a message a
person can act on. The shapes: docs/adr/0008-alert-intake.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MAX_ALERTS = 500
MAX_LABELS = 64
MAX_TEXT = 1000
MAX_KEY = 200

FIRING = "firing"
RESOLVED = "resolved"


class PayloadError(ValueError):
    """The payload cannot be understood; the message says why (answered as 400)."""


@dataclass(frozen=True)
class AlertEvent:
    fingerprint: str
    status: str
    starts_at: datetime
    ends_at: datetime | None
    group_key: str
    title: str = ""
    url: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


_FRACTION = re.compile(r"\.(\d+)")
# C0/C1 controls and the Unicode line separators: a sender's text is made one clean line.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def parse_time(value: Any, *, where: str, allow_zero: bool = False) -> datetime | None:
    """RFC 3339 with a zone. Nanoseconds (Go's format) are cut to microseconds."""
    if value in (None, "") and allow_zero:
        return None
    if not isinstance(value, str):
        raise PayloadError(f"{where}: expected an RFC 3339 time string, got {type(value).__name__}.")
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PayloadError(f"{where}: {value[:40]!r} is not an RFC 3339 time.") from None
    if parsed.tzinfo is None:
        raise PayloadError(f"{where}: {value[:40]!r} has no time zone.")
    if parsed.year <= 1:
        # Go's zero time: Alertmanager's and Grafana's "no end yet".
        if allow_zero:
            return None
        raise PayloadError(f"{where}: the zero time is not a valid time here.")
    return parsed


def _no_nul(text: str, *, where: str) -> str:
    # PostgreSQL stores no NUL in text or jsonb: refused here, so the payload is answered
    # 400 (and kept, escaped) instead of failing at the insert.
    if "\x00" in text:
        raise PayloadError(f"{where}: NUL characters are not allowed.")
    return text


def _text(value: Any, *, where: str, limit: int = MAX_TEXT) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float | bool):
        raise PayloadError(f"{where}: expected a string.")
    return _no_nul(str(value), where=where)[:limit]


def _string_map(value: Any, *, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PayloadError(f"{where}: expected an object of strings.")
    if len(value) > MAX_LABELS:
        raise PayloadError(f"{where}: more than {MAX_LABELS} entries.")
    return {
        _no_nul(str(k), where=f"{where} (a name)")[:MAX_KEY]: _text(v, where=f"{where}.{k}")
        for k, v in value.items()
    }


def labels_fingerprint(labels: Mapping[str, str]) -> str:
    """A stable key for an alert that came without one: its sorted label set."""
    canonical = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _alert_list(data: Any) -> list[Any]:
    if not isinstance(data, dict):
        raise PayloadError("The payload must be a JSON object.")
    alerts = data.get("alerts")
    if not isinstance(alerts, list):
        raise PayloadError('The payload needs an "alerts" list.')
    if len(alerts) > MAX_ALERTS:
        raise PayloadError(f"At most {MAX_ALERTS} alerts per payload.")
    return alerts


def _status(value: Any, *, where: str) -> str:
    if value not in (FIRING, RESOLVED):
        raise PayloadError(f'{where}.status: expected "firing" or "resolved", got {str(value)[:20]!r}.')
    return str(value)


def _prometheus_style(data: Any, *, group_key: str) -> list[AlertEvent]:
    events = []
    for index, raw in enumerate(_alert_list(data)):
        where = f"alerts[{index}]"
        if not isinstance(raw, dict):
            raise PayloadError(f"{where}: expected an object.")
        status = _status(raw.get("status"), where=where)
        labels = _string_map(raw.get("labels"), where=f"{where}.labels")
        annotations = _string_map(raw.get("annotations"), where=f"{where}.annotations")
        starts_at = parse_time(raw.get("startsAt"), where=f"{where}.startsAt")
        assert starts_at is not None
        ends_at = parse_time(raw.get("endsAt"), where=f"{where}.endsAt", allow_zero=True)
        if status == RESOLVED and ends_at is None:
            raise PayloadError(f"{where}.endsAt: a resolved alert needs its end time.")
        if status == FIRING:
            # For a firing alert, endsAt is only Alertmanager's expiry guess, not an end.
            ends_at = None
        fingerprint = _text(raw.get("fingerprint"), where=f"{where}.fingerprint", limit=MAX_KEY)
        title = annotations.get("summary") or annotations.get("title") or labels.get("alertname", "")
        url = raw.get("generatorURL") or raw.get("dashboardURL") or ""
        events.append(
            AlertEvent(
                fingerprint=fingerprint or labels_fingerprint(labels),
                status=status,
                starts_at=starts_at,
                ends_at=ends_at,
                group_key=group_key,
                title=title,
                url=_text(url, where=f"{where}.generatorURL"),
                labels=labels,
                annotations=annotations,
            )
        )
    return events


def parse_alertmanager(data: Any) -> list[AlertEvent]:
    if not isinstance(data, dict):
        raise PayloadError("The payload must be a JSON object.")
    if str(data.get("version", "")) != "4":
        raise PayloadError(
            f'Expected an Alertmanager webhook payload with "version": "4", got {str(data.get("version"))[:10]!r}.'
        )
    group_key = _text(data.get("groupKey"), where="groupKey", limit=500)
    if not group_key:
        raise PayloadError('The payload needs a "groupKey".')
    return _prometheus_style(data, group_key=group_key)


def parse_grafana(data: Any) -> list[AlertEvent]:
    if not isinstance(data, dict):
        raise PayloadError("The payload must be a JSON object.")
    # Grafana's legacy (pre-unified) alerting sent {"ruleName", "state", "evalMatches"}.
    if "alerts" not in data and "ruleName" in data:
        raise PayloadError(
            "Legacy Grafana alerting payloads are not supported; use a unified alerting contact point."
        )
    group_key = _text(data.get("groupKey"), where="groupKey", limit=500)
    if not group_key:
        common = _string_map(data.get("groupLabels") or data.get("commonLabels"), where="groupLabels")
        group_key = "grafana:" + labels_fingerprint(common)
    return _prometheus_style(data, group_key=group_key)


def parse_generic(data: Any) -> list[AlertEvent]:
    events = []
    for index, raw in enumerate(_alert_list(data)):
        where = f"alerts[{index}]"
        if not isinstance(raw, dict):
            raise PayloadError(f"{where}: expected an object.")
        fingerprint = _text(raw.get("id"), where=f"{where}.id", limit=MAX_KEY)
        if not fingerprint:
            raise PayloadError(f'{where}.id: every alert needs a stable "id".')
        status = _status(raw.get("status"), where=where)
        labels = _string_map(raw.get("labels"), where=f"{where}.labels")
        starts_at = parse_time(raw.get("started_at"), where=f"{where}.started_at")
        assert starts_at is not None
        ends_at = parse_time(raw.get("ended_at"), where=f"{where}.ended_at", allow_zero=True)
        if status == RESOLVED and ends_at is None:
            raise PayloadError(f"{where}.ended_at: a resolved alert needs its end time.")
        if status == FIRING:
            ends_at = None
        events.append(
            AlertEvent(
                fingerprint=fingerprint,
                status=status,
                starts_at=starts_at,
                ends_at=ends_at,
                group_key=_text(raw.get("group"), where=f"{where}.group", limit=500) or fingerprint,
                title=_text(raw.get("title"), where=f"{where}.title"),
                url=_text(raw.get("url"), where=f"{where}.url"),
                labels=labels,
            )
        )
    return events


PARSERS: dict[str, Callable[[Any], list[AlertEvent]]] = {
    "alertmanager": parse_alertmanager,
    "grafana": parse_grafana,
    "generic": parse_generic,
}


def parse_payload(kind: str, body: bytes) -> list[AlertEvent]:
    """Decode and parse one body for an integration of `kind`."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise PayloadError("The body is not UTF-8.") from None
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"The body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        ) from None
    except RecursionError:
        raise PayloadError("The body is nested too deeply.") from None
    return PARSERS[kind](data)
