"""Alertmanager retries and runs in HA pairs: the same payload can arrive twice at once.
On PostgreSQL, two concurrent deliveries give one draft, one window and one alert row."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import connection

from alerts import services
from alerts.models import Alert, ReceivedPayload
from incidents.models import ImpactWindow, Incident
from tests.alerts.helpers import cloud_storage_catalogue, load_payloads, make_integration

pytestmark = pytest.mark.services


def test_two_concurrent_deliveries_of_one_payload_open_one_draft(
    transactional_db: None, postgres: None
) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    body = json.dumps(load_payloads("alertmanager_cloud_storage_2026_10.json")[0]).encode()
    barrier = threading.Barrier(2, timeout=10)
    actions: list[str] = []
    failures: list[BaseException] = []

    def deliver() -> None:
        try:
            barrier.wait()
            result: Any = services.alerts_receive(integration=integration, body=body)
            actions.extend(o["action"] for o in result.outcomes)
        except Exception as exc:  # noqa: BLE001 - reported below, in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    assert sorted(actions) == ["duplicate", "open"]
    assert Incident.objects.count() == ImpactWindow.objects.count() == Alert.objects.count() == 1
    assert ReceivedPayload.objects.count() == 2
