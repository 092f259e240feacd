"""The receiver configs of docs/alerts.md work as pasted: Alertmanager's passes `amtool
check-config`, and the generic curl command, pointed at the live server, opens a draft."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from incidents.models import Incident
from tests.alerts.helpers import cloud_storage_catalogue, make_integration, url_for
from tests.conftest import service_missing

DOC = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"


def _section() -> str:
    text = DOC.read_text()
    return text.split("## Pointing a monitoring tool at an integration", 1)[1].split("\n## ", 1)[0]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _section(), re.S)


def test_the_readme_alertmanager_config_is_valid(tmp_path: Path) -> None:
    amtool = shutil.which("amtool")
    if amtool is None:
        service_missing("amtool is not installed (apt-get install prometheus-alertmanager)")
        return
    config = tmp_path / "alertmanager.yml"
    config.write_text(_blocks("yaml")[0])
    result = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.services
def test_the_readme_generic_curl_command_opens_a_draft(live_server: Any) -> None:
    if shutil.which("curl") is None or shutil.which("openssl") is None:
        service_missing("curl and openssl are needed to run the README's command")
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("generic", gcs=gcs, fallback=fallback)
    [script] = _blocks("sh")
    url = live_server.url.replace("localhost", "127.0.0.1") + url_for(integration)
    script = script.replace("https://status.example.com/api/v1/integrations/3/alerts/", url)
    script = script.replace("<the integration secret>", integration.issued_secret)
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["alerts"][0]["action"] == "open", answer
    incident = Incident.objects.get()
    assert (incident.is_public, incident.title) == (False, "Partial outage of Cloud Storage in us-central1")
