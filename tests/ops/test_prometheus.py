"""The example Prometheus files (docker/prometheus/) with the real Prometheus tools: the
rules check and pass their unit tests, the scrape config is valid, and a real Prometheus
server scrapes a live test server's /metrics with the bearer token and loads the rules."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from incidents.models import ImpactWindow
from tests.builders import make_incident, make_product
from tests.conftest import service_missing
from tests.waiting import wait_for

FILES = Path(__file__).resolve().parents[2] / "docker" / "prometheus"
TOKEN = "scrape-token-for-the-test"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        service_missing(f"{name} is not installed (apt-get install prometheus)")
    assert found is not None
    return found


def _run(*args: str, cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_the_rules_check_and_pass_their_unit_tests() -> None:
    promtool = _tool("promtool")
    assert "SUCCESS: 8 rules found" in _run(promtool, "check", "rules", "rules.yml", cwd=FILES)
    assert "SUCCESS" in _run(promtool, "test", "rules", "rules_test.yml", cwd=FILES)


def test_a_broken_rule_expectation_fails(tmp_path: Path) -> None:
    # The unit tests can fail: the same file with one expected summary changed does.
    promtool = _tool("promtool")
    shutil.copy(FILES / "rules.yml", tmp_path / "rules.yml")
    tests = (FILES / "rules_test.yml").read_text().replace("waited 1h 20m 0s", "waited 1h 25m 0s")
    (tmp_path / "rules_test.yml").write_text(tests)
    done = subprocess.run(
        [promtool, "test", "rules", "rules_test.yml"], cwd=tmp_path, capture_output=True, check=False
    )
    assert done.returncode != 0


def test_the_compose_scrape_config_is_valid(tmp_path: Path) -> None:
    promtool = _tool("promtool")
    for name in ("prometheus.yml", "rules.yml"):
        shutil.copy(FILES / name, tmp_path / name)
    (tmp_path / "metrics-token").write_text(TOKEN)
    assert "SUCCESS" in _run(promtool, "check", "config", "prometheus.yml", cwd=tmp_path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, **params: str) -> Any:
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def query(self, expr: str) -> list[dict[str, Any]]:
        body = self.get("/api/v1/query", query=expr)
        assert body["status"] == "success", body
        return list(body["data"]["result"])


@pytest.fixture
def prometheus_scraping(live_server: Any, tmp_path: Path) -> Iterator[Prometheus]:
    binary = _tool("prometheus")
    target = urllib.parse.urlsplit(live_server.url).port
    shutil.copy(FILES / "rules.yml", tmp_path / "rules.yml")
    (tmp_path / "metrics-token").write_text(TOKEN)
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "rule_files: [rules.yml]\n"
        "scrape_configs:\n"
        "  - job_name: statuspage\n"
        "    authorization: {type: Bearer, credentials_file: metrics-token}\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{target}']}}]\n"
    )
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        server = Prometheus(port)
        wait_for(server.ready, timeout=60)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.django_db(transaction=True)
def test_a_real_prometheus_scrapes_the_app_with_the_token(
    settings: Any, prometheus_scraping: Prometheus
) -> None:
    # Only the token opens /metrics: the loopback network Prometheus scrapes from is not listed.
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []
    gmail = make_product("Gmail")
    make_incident(title="Gmail down", product=gmail, level=ImpactWindow.Level.PARTIAL_OUTAGE)

    def scraped() -> list[dict[str, Any]] | None:
        return (
            prometheus_scraping.query(
                'statuspage_component_status{component="Gmail", level="partial_outage"}'
            )
            or None
        )

    series = wait_for(scraped, timeout=60)
    assert series[0]["value"][1] == "1"
    up = prometheus_scraping.query('up{job="statuspage"}')
    assert [s["value"][1] for s in up] == ["1"]
    assert prometheus_scraping.query('statuspage_ready{check="database"}')[0]["value"][1] == "1"
    # The rules file is loaded and evaluated against the scraped series.
    groups = prometheus_scraping.get("/api/v1/rules")["data"]["groups"]
    names = {rule["name"] for group in groups for rule in group["rules"]}
    assert {"CreditEmailsStuck", "StatusSnapshotStale", "StatusAppNotReady"} <= names
    assert all(rule["health"] in ("ok", "unknown") for group in groups for rule in group["rules"])


@pytest.mark.django_db(transaction=True)
def test_a_real_prometheus_without_the_token_is_refused(
    settings: Any, prometheus_scraping: Prometheus
) -> None:
    settings.METRICS_TOKEN = "another-token"
    settings.METRICS_ALLOWED_NETWORKS = []

    def refused() -> list[dict[str, Any]] | None:
        return prometheus_scraping.query('up{job="statuspage"} == 0') or None

    wait_for(refused, timeout=60)
    targets = prometheus_scraping.get("/api/v1/targets")["data"]["activeTargets"]
    assert "403" in targets[0]["lastError"]
