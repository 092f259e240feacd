"""The iCalendar feed of upcoming maintenance (RFC 5545, written by hand)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident
from subscriptions import ical
from tests.builders import make_location, make_product, utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 6, 1, 12, 0)


def _unfold(body: str) -> list[str]:
    """A strict reader: CRLF only, continuation lines start with one space."""
    assert body.endswith("\r\n")
    raw = body.split("\r\n")[:-1]
    assert all("\n" not in line and "\r" not in line for line in raw)
    assert all(len(line.encode()) <= 75 for line in raw), [line for line in raw if len(line.encode()) > 75]
    lines: list[str] = []
    for line in raw:
        if line.startswith(" "):
            lines[-1] += line[1:]
        else:
            lines.append(line)
    return lines


def _unescape(value: str) -> str:
    out, i = "", 0
    while i < len(value):
        if value[i] == "\\":
            out += {"n": "\n", "N": "\n"}.get(value[i + 1], value[i + 1])
            i += 2
        else:
            out += value[i]
            i += 1
    return out


def _events(lines: list[str]) -> list[dict[str, str]]:
    events: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in lines:
        name, _, value = line.partition(":")
        if line == "BEGIN:VEVENT":
            current = {}
        elif line == "END:VEVENT":
            assert current is not None
            events.append(current)
            current = None
        elif current is not None:
            current[name] = value
    return events


def _maintenance(product, title: str, start, end, **kw) -> Incident:  # type: ignore[no-untyped-def]
    return services.incident_open(
        title=title,
        kind=Incident.Kind.MAINTENANCE,
        impact=Incident.Impact.NONE,
        scheduled_for=start,
        scheduled_until=end,
        windows=[
            services.WindowSpec(
                product=product,
                level=ImpactWindow.Level.UNDER_MAINTENANCE,
                started_at=start,
                location=kw.pop("location", None),
            )
        ],
        **kw,
    )


def test_it_lists_upcoming_public_maintenance(client: Client) -> None:
    gmail = make_product("Gmail")
    storage = make_product("Cloud Storage", slug="cloud-storage")
    hidden = make_product("Internal Billing", is_public=False)
    zone = make_location("us-central1-b", kind="zone")
    with freeze_time(NOW):
        upcoming = _maintenance(
            storage,
            "Network upgrade; expect brief, retried errors, in us-central1-b",
            NOW + timedelta(days=1),
            NOW + timedelta(days=1, hours=4),
            location=zone,
            summary="Line one.\nLine two with a backslash \\ and a very long sentence " + "é" * 60,
        )
        finished = _maintenance(
            gmail, "Finished maintenance", NOW - timedelta(days=2), NOW - timedelta(days=1)
        )
        services.incident_resolve(incident=finished, resolved_at=NOW - timedelta(days=1))
        _maintenance(
            hidden, "Staff-only product maintenance", NOW + timedelta(days=2), NOW + timedelta(days=3)
        )
        _maintenance(gmail, "Not public", NOW + timedelta(days=2), NOW + timedelta(days=3), is_public=False)
        response = client.get("/maintenance.ics")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    lines = _unfold(response.content.decode())
    assert lines[:2] == ["BEGIN:VCALENDAR", "VERSION:2.0"]
    assert lines[-1] == "END:VCALENDAR"
    assert any(line.startswith("PRODID:") for line in lines)
    [event] = _events(lines)
    assert event["DTSTART"] == "20260602T120000Z"
    assert event["DTEND"] == "20260602T160000Z"
    assert event["UID"] == f"maintenance-{upcoming.public_id}@testserver"
    assert (
        event["SUMMARY"]
        == "Status maintenance: Network upgrade\\; expect brief\\, retried errors\\, in us-central1-b"
    )
    assert _unescape(event["SUMMARY"]).endswith(
        "Network upgrade; expect brief, retried errors, in us-central1-b"
    )
    description = _unescape(event["DESCRIPTION"])
    assert description.startswith("Affected: Cloud Storage\n\nLine one.\nLine two with a backslash \\ and")
    assert "é" * 60 in description
    assert event["URL"] == f"http://testserver/incidents/{upcoming.public_id}/"
    assert event["LOCATION"] == "us-central1-b"


def test_it_folds_without_splitting_characters() -> None:
    line = "DESCRIPTION:" + "€" * 100
    folded = ical.fold(line)
    parts = folded.split("\r\n")
    assert all(len(p.encode()) <= 75 for p in parts)
    assert "".join([parts[0]] + [p[1:] for p in parts[1:]]) == line


def test_it_escapes_text_values() -> None:
    assert ical.escape_text("a,b;c\\d\r\ne\nf\x07") == "a\\,b\\;c\\\\d\\ne\\nf"
