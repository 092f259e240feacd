"""Acceptance (issue 31): a TypeScript client built from the live schema compiles with
`tsc --strict` and runs a consumer's flow against a live server.

openapi-typescript turns /api/schema/ into `schema.d.ts`; openapi-fetch is the client;
tests/api/ts/flow.ts is the flow. All three npm packages are pinned in
tests/api/ts/package.json (and its lock file), installed by `.ci/run` with `npm ci`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from api import services as api_services
from incidents.models import Incident
from tests.api.conftest import World
from tests.conftest import service_missing

TS = Path(__file__).parent / "ts"
BIN = TS / "node_modules" / ".bin"


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path, live_server: Any) -> Path:
    """A copy of tests/api/ts with the types generated from the live schema."""
    node = shutil.which("node")
    if node is None or not (BIN / "tsc").exists():
        service_missing("the TypeScript client needs node and `npm ci --prefix tests/api/ts`")
    for name in ("flow.ts", "tsconfig.json", "package.json"):
        shutil.copy(TS / name, tmp_path / name)
    (tmp_path / "node_modules").symlink_to(TS / "node_modules")
    with urllib.request.urlopen(f"{live_server.url}/api/schema/?format=json", timeout=30) as response:
        (tmp_path / "schema.json").write_text(json.dumps(json.loads(response.read())))
    # A field with a default is optional in a request (the generator's default makes it
    # required, which is true only of responses).
    generated = _run(
        [
            str(BIN / "openapi-typescript"),
            "schema.json",
            "--default-non-nullable",
            "false",
            "-o",
            "schema.d.ts",
        ],
        tmp_path,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    return tmp_path


def test_the_typescript_client_compiles_strictly_and_runs_the_flow(
    project: Path, live_server: Any, world: World, alice: User
) -> None:
    compiled = _run([str(BIN / "tsc"), "-p", "."], project)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr

    key = api_services.api_key_create(user=alice, name="ts-flow", scope="write").raw
    ran = _run(["node", "build/flow.js", live_server.url, key, world.gmail.slug], project)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    incident = Incident.objects.get(public_id=result["id"])
    assert incident.status == "resolved" == result["status"]
    assert incident.title == "Elevated error rates in checkout (TypeScript)"
    assert incident.impact == "critical"  # its only window was a major outage


def test_a_field_the_schema_does_not_declare_fails_the_build(project: Path) -> None:
    flow = project / "flow.ts"
    flow.write_text(flow.read_text().replace('body: "We are investigating.",', 'bodyy: "Typo.",', 1))

    compiled = _run([str(BIN / "tsc"), "-p", "."], project)

    assert compiled.returncode != 0
    assert "bodyy" in compiled.stdout
