"""The vendor parsers, pure: payload in, normalised events out (no database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from alerts import parsers
from alerts.parsers import PayloadError
from tests.alerts.helpers import load_payloads


def test_it_reads_go_times_with_nanoseconds_and_the_zero_time() -> None:
    assert parsers.parse_time("2026-10-08T11:00:00.123456789Z", where="t") == datetime(
        2026, 10, 8, 11, 0, 0, 123456, tzinfo=UTC
    )
    assert parsers.parse_time("0001-01-01T00:00:00Z", where="t", allow_zero=True) is None
    with pytest.raises(PayloadError, match="no time zone"):
        parsers.parse_time("2026-10-08T11:00:00", where="t")


def test_it_parses_the_recorded_alertmanager_payloads() -> None:
    first, *_rest = load_payloads("alertmanager_cloud_storage_2026_10.json")
    [event] = parsers.parse_alertmanager(first)
    assert event.status == "firing"
    assert event.fingerprint == "8c1f0b7e1a2d3c4f"
    assert event.group_key == '{}:{alertname="GCSWriteErrors"}'
    assert event.starts_at == datetime(2026, 10, 8, 11, 0, tzinfo=UTC)
    assert event.ends_at is None  # a firing alert's endsAt is only an expiry guess
    assert event.title == "Cloud Storage elevated write latency and errors in us-central1"
    assert event.labels["region"] == "us-central1"


def test_it_parses_grafana_and_generic_payloads() -> None:
    grafana = load_payloads("grafana_cloud_storage_2026_10.json")
    [resolved] = parsers.parse_grafana(grafana[1])
    assert resolved.status == "resolved"
    assert resolved.ends_at == datetime(2026, 10, 8, 23, 30, tzinfo=UTC)
    assert resolved.group_key.endswith(':{alertname="GCSWriteErrors"}')
    generic = load_payloads("generic_cloud_storage_2026_10.json")
    [zone] = parsers.parse_generic(generic[2])
    assert zone.fingerprint == "gcs-writes-us-central1-b"
    assert zone.group_key == "gcs-writes"
    assert zone.labels["zone"] == "us-central1-b"


@pytest.mark.parametrize(
    ("kind", "body", "message"),
    [
        ("alertmanager", b"{not json", "not JSON"),
        ("alertmanager", b"\xff\xfe", "not UTF-8"),
        ("alertmanager", b"[]", "JSON object"),
        ("alertmanager", b'{"version": "3", "alerts": []}', '"version": "4"'),
        ("alertmanager", b'{"version": "4", "alerts": []}', "groupKey"),
        ("alertmanager", b'{"version": "4", "groupKey": "g", "alerts": {}}', '"alerts" list'),
        (
            "alertmanager",
            b'{"version": "4", "groupKey": "g", "alerts": [{"status": "firing", "startsAt": "yesterday"}]}',
            "alerts[0].startsAt",
        ),
        (
            "alertmanager",
            b'{"version": "4", "groupKey": "g", "alerts": [{"status": "resolved", "startsAt": "2026-10-08T11:00:00Z",'
            b' "endsAt": "0001-01-01T00:00:00Z"}]}',
            "needs its end time",
        ),
        ("grafana", b'{"alerts": [{"status": "pending"}]}', '"firing" or "resolved"'),
        ("grafana", b'{"ruleName": "x", "state": "alerting"}', "Legacy Grafana"),
        ("generic", b'{"alerts": [{"status": "firing", "started_at": "2026-10-08T11:00:00Z"}]}', '"id"'),
        (
            "generic",
            b'{"alerts": [{"id": "a", "status": "firing", "started_at": "2026-10-08T11:00:00Z", '
            b'"labels": "x"}]}',
            "labels",
        ),
        ("generic", b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    ],
)
def test_it_refuses_malformed_payloads_with_a_message(kind: str, body: bytes, message: str) -> None:
    with pytest.raises(
        PayloadError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parsers.parse_payload(kind, body)


def test_it_keys_an_alert_without_fingerprint_on_its_labels() -> None:
    body = {
        "version": "4",
        "groupKey": "g",
        "alerts": [
            {"status": "firing", "labels": {"b": "2", "a": "1"}, "startsAt": "2026-10-08T11:00:00Z"},
            {"status": "firing", "labels": {"a": "1", "b": "2"}, "startsAt": "2026-10-08T11:00:00Z"},
        ],
    }
    first, second = parsers.parse_alertmanager(body)
    assert first.fingerprint == second.fingerprint != ""
