"""An iCalendar (RFC 5545) feed of upcoming maintenance, written by hand.

Small enough not to need a library: CRLF line endings, TEXT values escaped
(backslash, semicolon, comma, newline), long lines folded at 75 octets without
splitting a UTF-8 character, times in UTC ("Z" form), stable UIDs so a calendar
updates an event instead of adding a copy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

CRLF = "\r\n"
MAX_OCTETS = 75


@dataclass(frozen=True)
class CalendarEvent:
    uid: str
    start: datetime
    end: datetime
    summary: str
    description: str
    url: str
    stamp: datetime
    sequence: int = 0
    status: str = "CONFIRMED"
    location: str = ""


def escape_text(value: str) -> str:
    """RFC 5545 3.3.11: escape backslash, semicolon, comma and line breaks."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    value = value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    value = value.replace("\n", "\\n")
    # Other control characters are not allowed in TEXT; drop them.
    return "".join(ch for ch in value if ch == "\t" or (ord(ch) >= 32 and ord(ch) != 127))


def fold(line: str) -> str:
    """RFC 5545 3.1: lines longer than 75 octets continue on lines starting with a space."""
    encoded = line.encode()
    if len(encoded) <= MAX_OCTETS:
        return line
    parts: list[str] = []
    current = ""
    size = 0
    limit = MAX_OCTETS
    for ch in line:
        width = len(ch.encode())
        if size + width > limit:
            parts.append(current)
            current, size = "", 0
            limit = MAX_OCTETS - 1  # continuation lines start with one space
        current += ch
        size += width
    parts.append(current)
    return (CRLF + " ").join(parts)


def format_utc(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _line(name: str, value: str) -> str:
    return fold(f"{name}:{value}") + CRLF


def build_calendar(*, name: str, prodid: str, events: Iterable[CalendarEvent]) -> str:
    out = [
        _line("BEGIN", "VCALENDAR"),
        _line("VERSION", "2.0"),
        _line("PRODID", escape_text(prodid)),
        _line("CALSCALE", "GREGORIAN"),
        _line("METHOD", "PUBLISH"),
        _line("X-WR-CALNAME", escape_text(name)),
    ]
    for event in events:
        out += [
            _line("BEGIN", "VEVENT"),
            _line("UID", escape_text(event.uid)),
            _line("DTSTAMP", format_utc(event.stamp)),
            _line("DTSTART", format_utc(event.start)),
            _line("DTEND", format_utc(event.end)),
            _line("SEQUENCE", str(event.sequence)),
            _line("STATUS", event.status),
            _line("SUMMARY", escape_text(event.summary)),
            _line("DESCRIPTION", escape_text(event.description)),
            _line("URL", event.url),
        ]
        if event.location:
            out.append(_line("LOCATION", escape_text(event.location)))
        out.append(_line("END", "VEVENT"))
    out.append(_line("END", "VCALENDAR"))
    return "".join(out)
