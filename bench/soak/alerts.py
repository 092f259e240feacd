"""Alert intake load from a real Prometheus Alertmanager (the Debian package's binary, as
tests/alerts/test_alertmanager.py runs it): alerts fired and resolved through its API, each
delivered by its webhook to the integration's intake URL through nginx, retried by
Alertmanager itself while the app is down. The invariant: every alert fired and resolved
gave one alert row and one draft incident, both resolved, however often it was delivered.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import threading
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.soak.load import History
from tests.faults import free_port


def binary() -> str | None:
    for name in ("prometheus-alertmanager", "alertmanager"):
        if found := shutil.which(name):
            return found
    return "/usr/bin/prometheus-alertmanager" if Path("/usr/bin/prometheus-alertmanager").exists() else None


def integration_create() -> tuple[int, str]:
    """An Alertmanager integration on a product of its own (the staff scripts never touch
    it): every alert opens a draft at once and resolves it when it resolves."""
    from alerts import services
    from incidents.models import ImpactLevel, Product

    product = Product.objects.create(name="Soak alerts", slug="soak-alerts", is_public=True)
    integration = services.integration_create(
        name="Soak Alertmanager",
        kind="alertmanager",
        default_product=product,
        default_level=ImpactLevel.DEGRADED_PERFORMANCE,
        flap_debounce_seconds=0,
    )
    return integration.pk, integration.issued_secret


class AlertSource:
    """One Alertmanager process, its webhook pointed at the intake URL."""

    def __init__(self, work: Path, receiver_url: str, token: str) -> None:
        found = binary()
        if found is None:
            raise SystemExit("prometheus-alertmanager is required (apt-get install prometheus-alertmanager)")
        self.dir = work / "alertmanager"
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        config = self.dir / "alertmanager.yml"
        # Each flush retries its notification until the group interval runs out, and only a
        # group whose firing notification Alertmanager saw delivered ever gets its resolved
        # one: 30 s outlasts the app's slowest answer (REQUEST_DEADLINE, nginx's 25 s) and
        # every fault's hold. With 2 s, a firing the app applied but answered late lost its
        # resolution (seed 7, bench/README.md).
        route = {"receiver": "statuspage", "group_by": ["alertname"], "group_wait": "1s",
                 "group_interval": "30s", "repeat_interval": "1h"}  # fmt: skip
        hook = {"url": receiver_url, "send_resolved": True,
                "http_config": {"authorization": {"type": "Bearer", "credentials": token}}}  # fmt: skip
        config.write_text(
            json.dumps({"route": route, "receivers": [{"name": "statuspage", "webhook_configs": [hook]}]})
        )
        self.base = f"http://127.0.0.1:{free_port()}"
        self.log_path = work / "logs" / "alertmanager.log"
        argv = [found, f"--config.file={config}", f"--storage.path={self.dir / 'data'}",
                f"--web.listen-address={self.base.removeprefix('http://')}", "--cluster.listen-address=",
                "--log.level=info"]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while not self._ready():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("Alertmanager did not start: " + self.log_path.read_text()[-2000:])
            time.sleep(0.3)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def post(self, alerts: list[dict[str, Any]]) -> bool:
        request = urllib.request.Request(
            f"{self.base}/api/v2/alerts", data=json.dumps(alerts).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        if self.proc.poll() is None:
            self.proc.kill()


def _seconds(value: datetime) -> str:
    return value.replace(microsecond=0).isoformat()


def alerts_script(source: AlertSource, history: History, rng: random.Random, stop: threading.Event) -> None:
    """Fire an alert, hold it 5-15 s, resolve it; again after 3-8 s."""
    n = 0
    while not stop.wait(rng.uniform(3, 8)):
        n += 1
        name = f"SoakAlert{n:03d}"
        started = datetime.now(UTC) - timedelta(seconds=1)
        alert = {"labels": {"alertname": name, "service": "soak"},
                 "annotations": {"summary": f"Soak alert {n}"}, "startsAt": _seconds(started),
                 "endsAt": _seconds(started + timedelta(hours=1))}  # fmt: skip
        op: dict[str, Any] = {
            "kind": "alert",
            "name": name,
            "t0": history.now(),
            "fired": source.post([alert]),
        }
        stop.wait(rng.uniform(5, 15))
        # Resolved now (whole seconds after its start), even when the run is stopping.
        ended = max(started + timedelta(seconds=2), datetime.now(UTC) - timedelta(seconds=1))
        op["resolved"] = source.post([{**alert, "endsAt": _seconds(ended)}])
        op["t1"] = history.now()
        history.add(op)


def _states(integration: int, names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """alertname -> [(alert status, its draft's status)] as the database has them."""
    from alerts.models import Alert

    found: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
    rows = Alert.objects.filter(integration_id=integration).select_related("group__incident")
    for alert in rows:
        incident = alert.group.incident.status if alert.group else "no draft"
        found.setdefault(str(alert.labels.get("alertname")), []).append((alert.status, incident))
    return found


def intake_check(history: History, integration: int, *, wait: float = 90) -> dict[str, Any]:
    """Every alert Alertmanager took (fired and resolved): one alert row, resolved, with one
    draft incident, resolved. Waits up to `wait` s for Alertmanager's retries to land."""
    from alerts.models import AlertGroup

    sent = [a for a in history.of("alert") if a["fired"] and a["resolved"]]
    names = [a["name"] for a in sent]
    deadline = time.monotonic() + wait
    while True:
        states = _states(integration, names)
        done = all(
            rows and all(r == ("resolved", "resolved") for r in rows) for n in names for rows in [states[n]]
        )
        if done or time.monotonic() > deadline:
            break
        time.sleep(2)
    violations = []
    for name in names:
        rows = states[name]
        if len(rows) != 1 or rows[0] != ("resolved", "resolved"):
            violations.append(f"{name}: alert rows (status, draft) {rows}")
    groups = Counter(
        str(g)
        for g in AlertGroup.objects.filter(integration_id=integration).values_list("group_key", flat=True)
    )
    violations += [f"group {key} opened {n} drafts" for key, n in groups.items() if n > 1]
    figures = {
        "alerts fired and resolved": len(sent),
        "not taken by Alertmanager": len(history.of("alert")) - len(sent),
        "drafts opened": sum(groups.values()),
        "resolved, one row and one draft each": len(names)
        - sum(1 for v in violations if not v.startswith("group")),
    }
    return {"figures": figures, "violations": violations}
