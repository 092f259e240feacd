"""Public pages right after a change with every database round trip slowed by 3 s (a
loopback TCP proxy adds the latency), against the healthy database: requests/s, p50/p99,
the share answered within the 500 ms budget, and how (fresh, stale, 503).

    .venv/bin/python bench/slow_db_bench.py [--duration 12] [--connections 32]

Figures: bench/README.md, "Public pages with a slow database"; design:
docs/adr/0006-deadlines.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_bench import recreate_database  # noqa: E402 - after the path is set
from tests.faults import FaultProxy  # noqa: E402

PY = ROOT / ".venv" / "bin" / "python"
WORK = ROOT / "var" / "bench-slow-db"
APP_PORT = 18091
BUDGET_MS = 500

LUA = r"""
local paths = {%(paths)s}
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", paths[(counter %% #paths) + 1])
end
fresh, stale, unavailable, other = 0, 0, 0, 0  -- globals: thread:get reads them in done()
response = function(status, headers, body)
  if status == 200 then
    if headers["X-Status-Snapshot"] == "stale" then stale = stale + 1 else fresh = fresh + 1 end
  elseif status == 503 then unavailable = unavailable + 1
  else other = other + 1 end
end
local threads = {}
setup = function(thread) table.insert(threads, thread) end
done = function(summary, latency, requests)
  local f, s, u, o = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    f = f + t:get("fresh"); s = s + t:get("stale"); u = u + t:get("unavailable"); o = o + t:get("other")
  end
  -- The fraction within budget: the largest percentile whose latency is within it
  -- (wrk's percentile(100) answers 0, so the search stays below it).
  local lo, hi = 0.0, 100.0
  for _ = 1, 40 do
    local mid = (lo + hi) / 2
    if latency:percentile(mid) <= %(budget_us)d then lo = mid else hi = mid end
  end
  io.write(string.format("RESULT requests=%%d fresh=%%d stale=%%d unavailable=%%d other=%%d p50_ms=%%.1f p99_ms=%%.1f max_ms=%%.1f within=%%.3f timeouts=%%d\n",
    summary.requests, f, s, u, o, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, lo, summary.errors.timeout))
end
"""


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
                return
        except Exception:  # noqa: BLE001 - still starting
            time.sleep(0.3)
    sys.exit(f"{url} did not come up")


def fetch_until_ok(url: str) -> None:
    """A cold page may be shed (503 + Retry-After) while others build: retry, bounded."""
    for _ in range(50):
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                r.read()
                return
        except urllib.error.HTTPError as exc:
            if exc.code != 503:
                raise
            time.sleep(0.2)
    sys.exit(f"{url} kept answering 503")


def run_wrk(label: str, base: str, paths: list[str], *, duration: int, connections: int) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(LUA % {"paths": ", ".join(f'"{p}"' for p in paths), "budget_us": BUDGET_MS * 1000})
    try:
        out: Any = subprocess.run(
            ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "30s", "-s", script.name, base],
            capture_output=True,
            text=True,
            check=False,
            timeout=duration + 60,
        )
        if out.returncode:
            sys.exit(f"wrk failed: {out.stderr[-2000:]}")
        out = out.stdout
    finally:
        os.unlink(script.name)
    if os.environ.get("BENCH_VERBOSE"):
        print(out)
    m = re.search(r"RESULT (.*)", out)
    if not m:
        sys.exit("wrk printed no result:\n" + out)
    result = {k: float(v) for k, v in (item.split("=") for item in m.group(1).split())}
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    result["rps"] = float(rps.group(1)) if rps else 0.0
    print(
        f"{label}: {result['rps']:.0f} req/s, p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, "
        f"max {result['max_ms']:.0f} ms, within {BUDGET_MS} ms: {result['within']:.2f}% | "
        f"fresh {result['fresh']:.0f}, stale {result['stale']:.0f}, 503 {result['unavailable']:.0f}, "
        f"other {result['other']:.0f}, timeouts {result['timeouts']:.0f}",
        flush=True,
    )
    return result


def time_static(url: str, *, stop: threading.Event, out: list[float]) -> None:
    for _ in range(2000):  # bounded; normally ended by `stop`
        if stop.is_set():
            return
        started = time.monotonic()
        with urllib.request.urlopen(url, timeout=10) as r:
            r.read()
        out.append((time.monotonic() - started) * 1000)
        time.sleep(0.05)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=12, help="seconds per wrk phase")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432/h19_slow_bench")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/10")
    parser.add_argument(
        "--delay", type=float, default=1.5, help="seconds added each way (3 s per round trip)"
    )
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is required: apt-get install wrk")
    return args


def app_env(args: argparse.Namespace, pg: re.Match[str], proxy: FaultProxy) -> dict[str, str]:
    return {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "bench-only",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "STATIC_MANIFEST": "0",
        "STATIC_ROOT": str(WORK / "static"),
        "VAR_DIR": str(WORK / "var"),
        "DATABASE_URL": f"postgres://{pg['user']}@127.0.0.1:{proxy.port}/{pg['db']}",
        "REDIS_URL": args.redis,
        "CACHE_KEY_PREFIX": f"h19-bench-{os.getpid()}",
        "CELERY_TASK_ALWAYS_EAGER": "1",
        "LOG_LEVEL": "ERROR",
        "GUNICORN_MAX_REQUESTS": "0",
        "GUNICORN_ACCESSLOG": "/dev/null",
        "PYTHONPATH": str(ROOT),
    }


def load_demo(env: dict[str, str]) -> None:
    print("preparing the demo database ...", flush=True)
    subprocess.run([str(PY), "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [str(PY), "manage.py", "load_demo"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )
    subprocess.run([str(PY), "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)


def psql(pg: re.Match[str], sql: str) -> str:
    return subprocess.run(
        ["psql", "-h", pg["host"], "-p", pg["port"], "-U", pg["user"], "-d", pg["db"], "-Atc", sql],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def public_paths(pg: re.Match[str]) -> list[str]:
    """The public URLs driven round robin, with a real incident and product of the demo."""
    incident = psql(pg, "SELECT public_id FROM incidents_incident ORDER BY started_at DESC LIMIT 1")
    product = psql(pg, "SELECT slug FROM incidents_product WHERE is_public ORDER BY position, id LIMIT 1")
    return [
        "/",
        "/api/v2/summary.json",
        "/history/",
        "/history/?month=2026-10",
        f"/products/{product}/",
        f"/incidents/{incident}/",
        "/api/v1/incidents/",
        "/history.atom",
        "/api/v2/incidents.json",
    ]


def measure_slowed(args: argparse.Namespace, base: str, paths: list[str]) -> dict[str, float]:
    """Phase 2, with a static file timed alongside it."""
    static_ms: list[float] = []
    stop = threading.Event()
    timer = threading.Thread(
        target=time_static,
        args=(base + "/static/css/status.css",),
        kwargs={"stop": stop, "out": static_ms},
    )
    timer.start()
    slow = run_wrk(
        f"2. database +{2 * args.delay:.0f} s/trip",
        base,
        paths,
        duration=args.duration,
        connections=args.connections,
    )
    stop.set()
    timer.join(timeout=15)
    static_ms.sort()
    if static_ms:
        p99 = static_ms[min(len(static_ms) - 1, int(len(static_ms) * 0.99))]
        print(
            f"   static file alongside phase 2: {len(static_ms)} requests, "
            f"median {statistics.median(static_ms):.1f} ms, p99 {p99:.1f} ms, max {static_ms[-1]:.1f} ms"
        )
    return slow


def measure(args: argparse.Namespace, env: dict[str, str], proxy: FaultProxy, paths: list[str]) -> None:
    """Warms every page, then the two phases; prints each and the summary."""
    base = f"http://127.0.0.1:{APP_PORT}"
    wait_http(base + "/")
    for _ in range(16):  # every worker process gets its copy of every page
        for path in paths:
            fetch_until_ok(base + path)
    d, c = args.duration, args.connections
    print(f"\nwrk -t2 -c{c} -d{d}s, {len(paths)} public URLs round robin, budget {BUDGET_MS} ms\n")
    healthy = run_wrk("1. healthy database     ", base, paths, duration=d, connections=c)

    # A change lands (every page must be rebuilt), then the database slows down.
    subprocess.run(
        [str(PY), "manage.py", "shell", "-c", "from edge.version import _bump; _bump()"],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    proxy.delay = args.delay
    slow = measure_slowed(args, base, paths)
    proxy.heal()
    print()
    print(f"p99 with the database slowed: {slow['p99_ms']:.1f} ms (healthy: {healthy['p99_ms']:.1f} ms)")
    print(f"within {BUDGET_MS} ms with the database slowed: {slow['within']:.2f}% (target >= 99%)")


def main() -> None:
    args = parse_args()
    pg = recreate_database(args.pg)
    proxy = FaultProxy((pg["host"], int(pg["port"])))
    WORK.mkdir(parents=True, exist_ok=True)
    env = app_env(args, pg, proxy)
    load_demo(env)
    paths = public_paths(pg)
    gunicorn = subprocess.Popen(
        [str(PY), "-m", "gunicorn", "--config", "docker/gunicorn.conf.py", "statuspage.wsgi",
         "--bind", f"127.0.0.1:{APP_PORT}"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        measure(args, env, proxy, paths)
    finally:
        gunicorn.send_signal(signal.SIGTERM)
        try:
            gunicorn.wait(timeout=30)
        except subprocess.TimeoutExpired:
            gunicorn.kill()
        proxy.close()


if __name__ == "__main__":
    main()
