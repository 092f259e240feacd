"""A NUL in any alert text, or raw in the body, is answered 400 naming the field, and the
payload is kept with the NUL escaped (PostgreSQL stores no NUL in text or jsonb). Run
with DATABASE_URL pointing at PostgreSQL to see the failure this guards against."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from alerts.models import Alert, Integration, ReceivedPayload
from incidents.models import Incident
from tests.alerts.helpers import cloud_storage_catalogue, make_integration, post

pytestmark = pytest.mark.django_db

NUL = "\x00"


def _am(labels: dict[str, str], annotations: dict[str, str], fingerprint: str = "f1") -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": "g",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": labels,
                "annotations": annotations,
                "startsAt": "2026-11-02T10:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "fingerprint": fingerprint,
            }
        ],
    }


def _generic(**fields: Any) -> dict[str, Any]:
    alert = {"id": "gcs", "status": "firing", "started_at": "2026-11-02T10:00:00Z", **fields}
    return {"alerts": [alert]}


@pytest.fixture
def integrations() -> dict[str, Integration]:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    return {kind: make_integration(kind, gcs=gcs, fallback=fallback) for kind in ("alertmanager", "generic")}


@pytest.mark.parametrize(
    ("kind", "payload", "field"),
    [
        ("alertmanager", _am({"service": f"st{NUL}orage"}, {}), "alerts[0].labels.service"),
        (
            "alertmanager",
            _am({"service": "storage"}, {"summary": f"x{NUL}"}),
            "alerts[0].annotations.summary",
        ),
        ("alertmanager", _am({f"serv{NUL}ice": "storage"}, {}), "alerts[0].labels (a name)"),
        ("alertmanager", _am({}, {}, fingerprint=f"f{NUL}1"), "alerts[0].fingerprint"),
        ("generic", _generic(id=f"g{NUL}cs"), "alerts[0].id"),
        ("generic", _generic(title=f"GCS{NUL}"), "alerts[0].title"),
        ("generic", _generic(group=f"g{NUL}"), "alerts[0].group"),
    ],
)
def test_a_nul_in_alert_text_is_a_400_naming_the_field_and_the_payload_is_kept(
    client: Client, integrations: dict[str, Integration], kind: str, payload: dict[str, Any], field: str
) -> None:
    body = json.dumps(payload).encode()  # the NUL travels as the JSON escape \u0000
    response = post(client, integrations[kind], body)
    assert response.status_code == 400, response.content
    assert response.json()["detail"] == f"{field}: NUL characters are not allowed."
    kept = ReceivedPayload.objects.get()
    assert (kept.status_code, kept.body) == (400, body.decode())
    assert Incident.objects.count() == Alert.objects.count() == 0


def test_a_raw_nul_byte_in_the_body_is_a_400_and_the_payload_is_kept_escaped(
    client: Client, integrations: dict[str, Integration]
) -> None:
    body = b'{"alerts": []}\x00'
    response = post(client, integrations["generic"], body)
    assert response.status_code == 400, response.content
    assert "not JSON" in response.json()["detail"]
    kept = ReceivedPayload.objects.get()
    assert kept.body == '{"alerts": []}\\u0000'
    assert NUL not in kept.outcome
