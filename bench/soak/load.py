"""The soak's load, every operation and observed answer recorded in `History`:
- readers: public pages and APIs through nginx at a steady rate;
- staff: declare, update and resolve incidents through the API with an API key, every
  write with an Idempotency-Key and retried with the same key until it is answered;
- finance: `manage.py sla_credits compute` then `send` for each closed month, retried
  until they succeed.
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.soak.stack import PY, ROOT, Stack
from bench.soak.world import PERIODS, World

READ_PATHS = ("/", "/api/v2/summary.json", "/history/", "/api/v1/incidents/", "/api/v2/status.json")
# Answers a staff client retries with the same key: no answer, the server busy or failing.
RETRY = {0, 409, 429, 500, 502, 503, 504}


@dataclass
class History:
    """Every operation, as the client saw it; appended from many threads."""

    started: float = field(default_factory=time.monotonic)
    ops: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def add(self, op: dict[str, Any]) -> None:
        with self.lock:
            self.ops.append(op)

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [op for op in self.ops if op["kind"] == kind]


def request(url: str, *, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None,
            timeout: float = 10) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
    except (OSError, urllib.error.URLError):
        return 0, {}, b""


def _summary_view(body: bytes) -> dict[str, str] | None:
    """incident id -> status, as /api/v2/summary.json showed them (unresolved ones)."""
    try:
        return {str(i["id"]): str(i["status"]) for i in json.loads(body)["incidents"]}
    except (ValueError, KeyError, TypeError):
        return None


def reader(
    stack: Stack, history: History, rng: random.Random, stop: threading.Event, interval: float
) -> None:
    while not stop.is_set():
        path = rng.choice(READ_PATHS)
        t0 = history.now()
        status, headers, body = request(stack.base + path)
        op = {"kind": "read", "path": path, "t0": t0, "t1": history.now(), "status": status}
        op["stale"] = headers.get("X-Status-Snapshot") == "stale"
        op["cache"] = headers.get("X-Cache", "")
        if path == "/api/v2/summary.json" and status == 200:
            op["view"] = _summary_view(body)
        history.add(op)
        stop.wait(max(0.0, interval - (history.now() - t0)))


class Staff:
    """One staff member's script on their own products (two scripts never share one)."""

    def __init__(
        self, stack: Stack, world: World, history: History, rng: random.Random, products: list[str]
    ) -> None:
        self.stack, self.world, self.history, self.rng = stack, world, history, rng
        self.products = products
        self.auth = {"Authorization": f"Bearer {world.api_key}", "Content-Type": "application/json"}

    def write(self, op: str, path: str, body: dict[str, Any], incident: str = "", status: str = "") -> str:
        """One idempotent write, retried with its key until answered; the incident id."""
        key = str(uuid.uuid4())
        t0, attempts, code, answer = self.history.now(), 0, 0, b""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            attempts += 1
            headers = {**self.auth, "Idempotency-Key": key}
            code, _h, answer = request(
                self.stack.base + path, method="POST", body=body, headers=headers, timeout=30
            )
            if code not in RETRY:
                break
            time.sleep(min(4.0, 0.25 * 2 ** min(attempts, 5)) * self.rng.uniform(0.5, 1.0))
        if code in (200, 201) and op == "create":
            incident = str(json.loads(answer)["id"])
        self.history.add(
            {"kind": "write", "op": op, "key": key, "token": body.get("body", ""), "incident": incident,
             "status": status, "t0": t0, "t1": self.history.now(), "code": code, "attempts": attempts}
        )  # fmt: skip
        return incident if code in (200, 201) else ""

    def script(self, stop: threading.Event) -> None:
        while not stop.is_set():
            token = uuid.uuid4().hex[:12]
            window: dict[str, Any] = {
                "product": self.rng.choice(self.products),
                "level": self.rng.choice(["degraded_performance", "partial_outage"]),
                "started_at": datetime.now(UTC).isoformat(),
            }
            if self.rng.random() < 0.5:
                window["location"] = self.rng.choice(self.world.locations)
            body = {"title": f"Soak {token}", "body": f"create {token}", "windows": [window]}
            incident = self.write("create", "/api/v1/incidents/", body, status="investigating")
            if not incident:
                continue
            base = f"/api/v1/incidents/{incident}/"
            for status in self.rng.sample(["identified", "monitoring"], self.rng.randint(0, 2)):
                stop.wait(self.rng.uniform(2, 6))
                self.write(
                    "update",
                    base + "updates/",
                    {"status": status, "body": f"{status} {token}"},
                    incident,
                    status,
                )
            stop.wait(self.rng.uniform(2, 6))
            self.write("resolve", base + "resolve/", {"body": f"resolved {token}"}, incident, "resolved")
            stop.wait(self.rng.uniform(1, 4))


def credits_script(stack: Stack, history: History, stop: threading.Event, minutes: float) -> None:
    """Compute and send each closed month, spread over the run's first two thirds."""
    for n, period in enumerate(PERIODS):
        if stop.wait(minutes * 60 * (0.1 + 0.55 * n / len(PERIODS)) - history.now()):
            return
        for action in ("compute", "send"):
            argv = [str(PY), "manage.py", "sla_credits", action, "--period", period]
            argv += ["--yes", "--as", "soak"] if action == "send" else []
            t0, attempts, code = history.now(), 0, -1
            while code != 0 and attempts < 20 and not stop.is_set():
                attempts += 1
                out = subprocess.run(
                    argv, cwd=ROOT, env=stack.env, capture_output=True, timeout=300, check=False
                )
                code = out.returncode
                if code:
                    stop.wait(3)
            history.add({"kind": "credits", "op": action, "period": period, "t0": t0, "t1": history.now(),
                         "code": code, "attempts": attempts})  # fmt: skip
