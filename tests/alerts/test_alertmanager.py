"""Acceptance: a real Prometheus Alertmanager posts to the live test server.

The Debian package's binary runs with its own config (a webhook receiver pointed at our
intake URL, with the integration's bearer token in `http_config.authorization`), its own
storage directory and a free loopback port, clustering off, and second-long grouping so
the test is quick. An alert fired and then resolved through Alertmanager's own API
(POST /api/v2/alerts with startsAt/endsAt) must give a draft incident with the right
window, then the closed window and the automatic resolution.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from alerts import services
from alerts.models import Alert, Integration
from incidents.models import Incident
from tests.alerts.helpers import alert_drafts, cloud_storage_catalogue, make_integration, url_for
from tests.conftest import service_missing
from tests.waiting import wait_for

pytestmark = pytest.mark.services

BINARY_NAMES = ("prometheus-alertmanager", "alertmanager")
WAIT_SECONDS = 30.0


def _binary() -> str:
    for name in BINARY_NAMES:
        found = shutil.which(name)
        if found:
            return found
    if os.path.exists("/usr/bin/prometheus-alertmanager"):
        return "/usr/bin/prometheus-alertmanager"
    service_missing("Prometheus Alertmanager is not installed (apt-get install prometheus-alertmanager)")
    raise AssertionError("unreachable")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT_SECONDS) -> Any:
    return wait_for(check, timeout=timeout, interval=0.2, message=f"waiting for {what}")


def _config(*, receiver_url: str, token: str) -> str:
    return json.dumps(  # JSON is YAML: no YAML library needed to write the config
        {
            "route": {
                "receiver": "statuspage",
                "group_by": ["alertname"],
                "group_wait": "1s",
                "group_interval": "1s",
                "repeat_interval": "1h",
            },
            "receivers": [
                {
                    "name": "statuspage",
                    "webhook_configs": [
                        {
                            "url": receiver_url,
                            "send_resolved": True,
                            "http_config": {"authorization": {"type": "Bearer", "credentials": token}},
                        }
                    ],
                }
            ],
        }
    )


class Alertmanager:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        request = urllib.request.Request(
            f"{self.base}/api/v2/alerts",
            data=json.dumps(alerts).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200


@pytest.fixture
def alertmanager_for(tmp_path: Path) -> Iterator[Callable[[str, str], Alertmanager]]:
    binary = _binary()
    processes: list[subprocess.Popen[bytes]] = []

    def start(receiver_url: str, token: str) -> Alertmanager:
        port = _free_port()
        config = tmp_path / "alertmanager.yml"
        config.write_text(_config(receiver_url=receiver_url, token=token))
        (tmp_path / "data").mkdir()
        log = (tmp_path / "alertmanager.log").open("wb")
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
                "--log.level=info",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        processes.append(process)
        manager = Alertmanager(port)
        try:
            _wait_for(
                "Alertmanager to be ready", lambda: process.poll() is None and manager.ready(), timeout=20
            )
        except AssertionError:
            raise AssertionError((tmp_path / "alertmanager.log").read_text()[-2000:]) from None
        return manager

    yield start
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _whole_seconds(value: datetime) -> datetime:
    return value.replace(microsecond=0)


def test_a_real_alertmanager_opens_a_draft_then_resolves_it(
    live_server: Any, alertmanager_for: Callable[[str, str], Alertmanager], tmp_path: Path
) -> None:
    gcs, fallback, region, _ = cloud_storage_catalogue()
    integration = make_integration("alertmanager", gcs=gcs, fallback=fallback, flap_debounce_seconds=0)
    receiver = live_server.url.replace("localhost", "127.0.0.1") + url_for(integration)
    manager = alertmanager_for(receiver, integration.issued_secret)

    now = datetime.now(UTC)
    starts = _whole_seconds(now - timedelta(minutes=10))
    alert = {
        "labels": {"alertname": "GCSWriteErrors", "service": "storage", "region": "us-central1"},
        "annotations": {"summary": "Cloud Storage write errors in us-central1"},
        "startsAt": starts.isoformat(),
        "endsAt": (now + timedelta(hours=1)).isoformat(),  # still firing
    }
    manager.post_alerts([alert])

    def draft() -> Incident | None:
        return Incident.objects.filter(alert_group__integration=integration).first()

    try:
        incident = _wait_for("the draft incident", draft)
    except AssertionError:
        raise AssertionError((tmp_path / "alertmanager.log").read_text()[-2000:]) from None
    assert incident.is_public is False
    assert incident.title == "Partial outage of Cloud Storage in us-central1"
    assert alert_drafts() == [incident]
    window = incident.windows.get()
    assert (window.product, window.location, window.level) == (gcs, region, "partial_outage")
    assert (window.started_at, window.ended_at) == (starts, None)
    firing = Alert.objects.get(integration=integration)
    assert firing.status == "firing" and len(firing.fingerprint) == 16  # Alertmanager's own fingerprint

    ends = _whole_seconds(datetime.now(UTC) - timedelta(seconds=1))
    manager.post_alerts([{**alert, "endsAt": ends.isoformat()}])

    def resolved() -> Incident | None:
        found = Incident.objects.get(pk=incident.pk)
        return found if found.status == Incident.Status.RESOLVED else None

    incident = _wait_for("the automatic resolution", resolved)
    window.refresh_from_db()
    assert window.ended_at == ends
    assert incident.resolved_at == ends
    assert incident.is_public is False  # still a draft: staff decide whether the public hears of it
    last = incident.updates.order_by("-created_at", "-id").first()  # the last posted
    assert last is not None and last.author is None and "resolved automatically" in last.body
    assert Alert.objects.get(integration=integration).status == "resolved"
    # Alertmanager's deliveries were kept for debugging, each accepted.
    statuses = set(Integration.objects.get(pk=integration.pk).payloads.values_list("status_code", flat=True))
    assert statuses == {200}
    assert services.alerts_tick().resolved == 0


def test_it_skips_with_a_clear_reason_without_the_binary_and_fails_when_services_are_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tests.conftest

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    monkeypatch.setattr(tests.conftest, "REQUIRE_SERVICES", False)
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install prometheus-alertmanager"):
        _binary()
    monkeypatch.setattr(tests.conftest, "REQUIRE_SERVICES", True)
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_SERVICES=1"):
        _binary()
