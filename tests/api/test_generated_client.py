"""Acceptance (issue 18): a client generated from the live schema runs a consumer's
whole flow against a live server, and the flow type-checks against that client.

Steps: fetch /api/schema/ from the live server; generate `status_client` with
openapi-python-client (pinned in requirements-dev.txt); mypy --strict every flow script
(tests/api/flows/*.py) against it at once; run the incident flow (anonymous reads, then create with
an Idempotency-Key, edit with If-Match, post an update, change a window's level, end it,
resolve, compute and list credit notices as staff) and check the database.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from api import services as api_services
from incidents.models import Incident
from tests.api.conftest import World
from tests.conftest import service_missing

HERE = Path(__file__).parent
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def generated_client(tmp_path: Path, live_server: Any) -> Iterator[Path]:
    generator = shutil.which("openapi-python-client", path=str(VENV_BIN)) or shutil.which(
        "openapi-python-client"
    )
    if generator is None:
        service_missing("openapi-python-client is not installed (pip install -r requirements-dev.txt)")
    with urllib.request.urlopen(f"{live_server.url}/api/schema/?format=json", timeout=30) as response:
        schema = json.loads(response.read())
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    (tmp_path / "config.json").write_text(
        json.dumps({"project_name_override": "status-client", "package_name_override": "status_client"})
    )
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    subprocess.run(
        [str(generator), "generate", "--path", "schema.json", "--config", "config.json", "--meta", "none",
         "--output-path", str(tmp_path / "status_client")],
        cwd=tmp_path, env=env, check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [
            m for m in sys.modules if m == "status_client" or m.startswith(("status_client.", "flows"))
        ]:
            del sys.modules[name]


def _type_check_flows(generated_client: Path) -> None:
    """Every flow type-checks against the generated client (the generator's own code is
    not ours to check: --follow-imports=silent)."""
    shutil.copytree(HERE / "flows", generated_client / "flows", ignore=shutil.ignore_patterns("__pycache__"))
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(generated_client / ".mypy"), "-p", "flows"],
        cwd=generated_client, env={"MYPYPATH": str(generated_client), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_generated_client_runs_the_whole_flow(
    generated_client: Path, live_server: Any, world: World, alice: User
) -> None:
    _type_check_flows(generated_client)

    key = api_services.api_key_create(user=alice, name="flow", scope="write").raw
    module = importlib.import_module("flows.incident")
    result = module.run(live_server.url, key, world.gmail.slug)

    assert result.public_incidents < result.staff_incidents
    assert result.levels == ["degraded_performance", "major_outage"]
    assert result.status == "resolved" and result.title == "Elevated error rates in checkout"
    incident = Incident.objects.get(public_id=result.incident_id)
    assert Incident.objects.filter(title=incident.title).count() == 1  # the replay created nothing
    # The update's major outage raised the recorded impact to its worst (ADR 0013).
    assert incident.impact == "critical" and incident.status == "resolved"
    assert incident.updates.filter(pk=result.update_id, status="identified").exists()
    first, raised = incident.windows.order_by("started_at")
    # The update closed the degraded window at its time and opened the major one there.
    assert first.level == "degraded_performance" and first.ended_at == raised.started_at
    assert raised.level == "major_outage" and raised.ended_at is not None
    assert raised.description == "Checkout only."
    assert result.notices >= 0
