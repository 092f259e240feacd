"""Cached public pages under load (gunicorn with the production config, nginx, wrk), against
a bare Django view and an nginx static file measured in the same run; also the snapshot
paths with the database unreachable. Needs `wrk` and `nginx`; loopback only.

    .venv/bin/python bench/http_bench.py [--duration 10] [--connections 64]

Targets and figures: bench/README.md, "The status page under load"; design:
docs/adr/0003-page-cache.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / ".venv" / "bin" / "python"
WORK = ROOT / "var" / "bench"
APP_PORT = 18081
DB_PROXY_PORT = 18432
NGINX_PORT = 18080
NGINX_CACHE_PORT = 18082
APP = f"http://127.0.0.1:{APP_PORT}"


@dataclass
class WrkResult:
    label: str
    rps: float
    p99_ms: float
    errors: int


def free_port(port: int) -> None:
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            sys.exit(f"port {port} is in use; stop what runs there first")


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                r.read()
                return
        except Exception:  # noqa: BLE001 - still starting
            time.sleep(0.2)
    sys.exit(f"{url} did not come up")


def parse_latency(text: str) -> float:
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", text)
    if not m:
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def run_wrk(label: str, url: str, *, duration: int, connections: int) -> WrkResult:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps_m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    errors = 0
    for m in re.finditer(r"(?:Non-2xx or 3xx responses|Socket errors:.*?timeout)\s*:?\s*(\d+)", out):
        errors += int(m.group(1))
    if os.environ.get("BENCH_VERBOSE"):
        print(out)
    for line in out.splitlines():
        if "Non-2xx" in line or "Socket errors" in line:
            print(f"  {label}: {line.strip()}")
    return WrkResult(label, float(rps_m.group(1)) if rps_m else 0.0, parse_latency(out), errors)


class TcpProxy:
    """A loopback TCP proxy to PostgreSQL that can be cut, to take the database away
    from the app without stopping the server other processes use."""

    def __init__(self, listen: int, target: tuple[str, int]) -> None:
        self.listen, self.target = listen, target
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen))
        self.sock.listen(128)
        self.conns: list[socket.socket] = []
        self.up = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()

    def cut(self) -> None:
        self.up = False
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.sock.close()  # new connections are now refused


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432/statuspage_bench")
    args = parser.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is required: apt-get install wrk nginx-light")
    for port in (APP_PORT, DB_PROXY_PORT, NGINX_PORT, NGINX_CACHE_PORT):
        free_port(port)
    return args


def recreate_database(url: str) -> re.Match[str]:
    """Drops and creates the database `url` names (with psql); returns its parts."""
    pg = re.match(r"postgres://(?P<user>[^@]+)@(?P<host>[^:/]+):(?P<port>\d+)/(?P<db>\w+)", url)
    if not pg:
        sys.exit("--pg must look like postgres://user@host:port/dbname")
    subprocess.run(
        ["psql", "-h", pg["host"], "-p", pg["port"], "-U", pg["user"], "-d", "postgres", "-qc",
         f"DROP DATABASE IF EXISTS {pg['db']}", "-c", f"CREATE DATABASE {pg['db']}"],
        check=True,
    )  # fmt: skip
    return pg


def app_env(pg: re.Match[str]) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.bench_settings",
        "DEBUG": "0",
        "SECRET_KEY": "bench-only",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "STATIC_MANIFEST": "0",
        "VAR_DIR": str(WORK / "var"),
        "DATABASE_URL": f"postgres://{pg['user']}@127.0.0.1:{DB_PROXY_PORT}/{pg['db']}",
        "DB_CONNECT_TIMEOUT": "1",
        "PUBLIC_CACHE_TTL": os.environ.get("BENCH_PUBLIC_CACHE_TTL", "60"),
        "LOG_LEVEL": "ERROR",
        # Steady state: no worker recycling in the middle of a measurement.
        "GUNICORN_MAX_REQUESTS": "0",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("REDIS_URL", None)  # per-process local cache: what a single box runs
    return env


def load_demo(env: dict[str, str]) -> None:
    print("preparing the demo database ...", flush=True)
    subprocess.run([str(PY), "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [str(PY), "manage.py", "load_demo"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )


def start_gunicorn(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(PY), "-m", "gunicorn", "--config", "docker/gunicorn.conf.py", "statuspage.wsgi",
         "--bind", f"127.0.0.1:{APP_PORT}", "--access-logfile", "/dev/null"],
        cwd=ROOT, env=env,
    )  # fmt: skip


def warm_up(snapshots: Path) -> bytes:
    """Every worker process builds and caches its copy; returns the `/` snapshot's bytes."""
    for path in ("/", "/api/v2/summary.json"):
        for _ in range(64):
            urllib.request.urlopen(APP + path, timeout=10).read()
    page = (snapshots / "index.html").read_bytes()
    (WORK / "bare-body.html").write_bytes(page)
    return page


def nginx_conf(nginx_dir: Path, static_root: Path, snapshots: Path) -> str:
    return f"""
worker_processes 2;
{"user root;" if os.geteuid() == 0 else ""}
pid {nginx_dir}/nginx.pid;
error_log {nginx_dir}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {nginx_dir}/body; proxy_temp_path {nginx_dir}/proxy;
  fastcgi_temp_path {nginx_dir}/fcgi; uwsgi_temp_path {nginx_dir}/uwsgi; scgi_temp_path {nginx_dir}/scgi;
  # As in docker/nginx.conf: after a failed connect the upstream is marked down for a
  # while and requests go straight to the snapshot, without a connect attempt each.
  upstream app_down {{ server 127.0.0.1:9 max_fails=1 fail_timeout=30s; server 127.0.0.1:9 down; }}
  # The production front of docker/nginx.conf: a one-second micro-cache of public pages
  # (no cache lock: waiters on nginx's lock are woken in 500 ms steps).
  proxy_cache_path {nginx_dir}/cache keys_zone=status:10m max_size=64m inactive=10m;
  server {{
    listen 127.0.0.1:{NGINX_CACHE_PORT};
    location / {{
      proxy_pass http://127.0.0.1:{APP_PORT};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache status;
      proxy_cache_valid 200 1s;
      proxy_cache_lock off;
      proxy_cache_use_stale updating error timeout http_502 http_503 http_504;
      proxy_ignore_headers Cache-Control Expires;
    }}
  }}
  server {{
    listen 127.0.0.1:{NGINX_PORT};
    location = /static-index.html {{ root {static_root}; try_files /index.html =404; }}
    # The app-down path of docker/nginx.conf: an upstream nobody answers on, so every
    # request is served from the snapshot the app wrote.
    location / {{
      proxy_pass http://app_down;
      proxy_connect_timeout 1s;
      proxy_intercept_errors on;
      error_page 502 503 504 = @snapshot;
    }}
    location @snapshot {{
      root {snapshots};
      add_header X-Status-Snapshot "stale" always;
      rewrite ^/$ /index.html break;
    }}
  }}
}}
"""


def start_nginx(nginx_dir: Path, page: bytes, snapshots: Path) -> subprocess.Popen[bytes]:
    """nginx in front (micro-cache) and as the app-down fallback, beside a static copy of `page`."""
    static_root = nginx_dir / "static"
    static_root.mkdir()
    (static_root / "index.html").write_bytes(page)
    conf = nginx_dir / "nginx.conf"
    conf.write_text(nginx_conf(nginx_dir, static_root, snapshots))
    nginx = subprocess.Popen(["nginx", "-c", str(conf), "-g", "daemon off;"])
    time.sleep(0.5)
    if nginx.poll() is not None:
        sys.exit("nginx did not start: " + (nginx_dir / "error.log").read_text(errors="replace"))
    wait_http(f"http://127.0.0.1:{NGINX_PORT}/static-index.html")
    assert urllib.request.urlopen(f"http://127.0.0.1:{NGINX_PORT}/", timeout=5).read() == page
    return nginx


def measure_healthy(d: int, c: int) -> dict[str, WrkResult]:
    return {
        "G": run_wrk("/ via nginx 1 s micro-cache -> gunicorn", f"http://127.0.0.1:{NGINX_CACHE_PORT}/", duration=d, connections=c),
        "A": run_wrk("cached / (gunicorn)", APP + "/", duration=d, connections=c),
        "B": run_wrk("cached /api/v2/summary.json (gunicorn)", APP + "/api/v2/summary.json", duration=d, connections=c),
        "C": run_wrk("bare Django view, same bytes (gunicorn)", APP + "/bench/bare/", duration=d, connections=c),
        "D": run_wrk("snapshot via nginx (app down)", f"http://127.0.0.1:{NGINX_PORT}/", duration=d, connections=c),
        "E": run_wrk("nginx static file, same bytes", f"http://127.0.0.1:{NGINX_PORT}/static-index.html", duration=d, connections=c),
    }  # fmt: skip


def measure_database_down(d: int, c: int) -> WrkResult:
    """`/` with the database gone and no process holding a cached copy."""
    r = urllib.request.urlopen(APP + "/", timeout=10)
    print(
        f"\nwith the database unreachable: / answered {r.status}, X-Status-Snapshot={r.headers.get('X-Status-Snapshot')}"
    )
    result = run_wrk("/ with the database unreachable (gunicorn)", APP + "/", duration=d, connections=c)
    code = 0
    try:
        urllib.request.urlopen(APP + "/history/", timeout=10)
    except urllib.error.HTTPError as exc:
        code = exc.code
    print(f"with the database unreachable: /history/ answered {code or 200}")
    return result


def measure(
    args: argparse.Namespace, env: dict[str, str], proxy: TcpProxy, snapshots: Path
) -> dict[str, WrkResult]:
    """Starts gunicorn and nginx, runs every wrk measurement, stops them again."""
    gunicorn = start_gunicorn(env)
    nginx_dir = Path(tempfile.mkdtemp(prefix="nginx-bench-"))
    nginx_dir.chmod(0o755)  # nginx workers drop root and must read the files
    nginx = None
    try:
        wait_http(APP + "/api/v2/summary.json")
        page = warm_up(snapshots)
        nginx = start_nginx(nginx_dir, page, snapshots)
        results = measure_healthy(args.duration, args.connections)

        # The database goes away (the proxy to it is cut) and the app restarts, so no
        # process has a cached copy: every page must come from the snapshot on disk.
        proxy.cut()
        gunicorn.send_signal(signal.SIGTERM)
        gunicorn.wait(timeout=30)
        gunicorn = start_gunicorn(env)
        wait_http(APP + "/")
        results["F"] = measure_database_down(args.duration, args.connections)
    finally:
        gunicorn.send_signal(signal.SIGTERM)
        gunicorn.wait(timeout=30)
        if nginx:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(timeout=10)
        shutil.rmtree(nginx_dir, ignore_errors=True)
    return results


def print_report(args: argparse.Namespace, results: dict[str, WrkResult]) -> None:
    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s, {os.cpu_count()} cores, loopback\n")
    print(f"{'':3}{'endpoint':46}{'req/s':>10}{'p99 ms':>10}{'errors':>8}")
    for key, res in results.items():
        print(f"{key:3}{res.label:46}{res.rps:10.0f}{res.p99_ms:10.2f}{res.errors:8d}")
    a, b, cc, dd, e = (results[k] for k in "ABCDE")
    print()
    print(f"cached /            / bare Django view : {a.rps / cc.rps:.2f}  (target >= 0.80)")
    print(f"cached summary.json / bare Django view : {b.rps / cc.rps:.2f}  (target >= 0.80)")
    print(f"nginx snapshot      / nginx static     : {dd.rps / e.rps:.2f}  (target >= 0.90)")
    print(f"p99 cached /: {a.p99_ms:.1f} ms, summary.json: {b.p99_ms:.1f} ms  (target < 50 ms)")
    print(
        f"p99 / via the nginx micro-cache (docker/nginx.conf): {results['G'].p99_ms:.1f} ms  (target < 50 ms)"
    )
    print(f"database unreachable / cached /        : {results['F'].rps / a.rps:.2f}")


def main() -> None:
    args = parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    snapshots = WORK / "var" / "snapshots"
    if snapshots.exists():
        shutil.rmtree(snapshots)
    pg = recreate_database(args.pg)
    proxy = TcpProxy(DB_PROXY_PORT, (pg["host"], int(pg["port"])))
    env = app_env(pg)
    load_demo(env)
    results = measure(args, env, proxy, snapshots)
    print_report(args, results)


if __name__ == "__main__":
    main()
