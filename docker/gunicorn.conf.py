"""gunicorn settings for production. Every value can be overridden from the environment."""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Threads keep cached reads cheap; processes spread the CPU-bound renders across cores.
worker_class = "gthread"


def cpu_limit() -> float:
    """The CPUs this container may use: its cgroup's CPU quota (cgroup v2 `cpu.max`, v1
    `cpu.cfs_quota_us`), else the CPUs it may be scheduled on. Not the host's count: a
    container limited to one CPU on a 32-core host must not start 64 workers."""
    cpus = float(len(os.sched_getaffinity(0)))
    quota = period = ""
    try:
        quota, _sep, period = Path("/sys/fs/cgroup/cpu.max").read_text().partition(" ")
    except OSError:
        for base in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
            try:
                quota = Path(base, "cpu.cfs_quota_us").read_text()
                period = Path(base, "cpu.cfs_period_us").read_text()
                break
            except OSError:
                continue
    quota, period = quota.strip(), period.strip()
    if quota and quota not in ("max", "-1") and period and int(period) > 0:
        cpus = min(cpus, int(quota) / int(period))
    return cpus


# Default: two per CPU of the container's limit (at least one CPU's worth).
workers = int(os.environ.get("GUNICORN_WORKERS", 2 * max(1, math.ceil(cpu_limit()))))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
# A short listen queue: beyond it the kernel refuses connections fast instead of holding
# a queue that grows while the herd keeps arriving. The load balancer retries elsewhere.
backlog = int(os.environ.get("GUNICORN_BACKLOG", 256))
# Above REQUEST_DEADLINE (20 s), which bounds a request's database time: reaching this
# means a thread is stuck somewhere else, and the watchdog below replaces the worker.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 30))
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then so a slow leak cannot build up; jitter avoids a herd of
# restarts at the same moment.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", 20000))
max_requests_jitter = 2000
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-")
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


# --- Watchdog for stuck request threads -------------------------------------------------
# With gthread, the worker's heartbeat comes from its main loop, not from the request
# threads, so `timeout` never fires for a thread stuck inside a request (a database that
# stopped answering once held threads for 75 s). This does: a request running longer
# than `timeout` makes the worker exit, and the arbiter starts a fresh one. The database
# bounds (edge/deadline.py) should make this never happen; it is the backstop.
_started: dict[int, float] = {}


def pre_request(worker: Any, req: Any) -> None:
    _started[threading.get_ident()] = time.monotonic()


def post_request(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    _started.pop(threading.get_ident(), None)


def post_worker_init(worker: Any) -> None:
    limit = worker.cfg.timeout

    def watch() -> None:
        while worker.alive:
            time.sleep(1)
            oldest = min(_started.values(), default=None)
            if oldest is not None and time.monotonic() - oldest > limit:
                worker.log.critical(
                    "a request has run for more than %s s: replacing worker %s", limit, os.getpid()
                )
                os._exit(1)

    threading.Thread(target=watch, name="request-watchdog", daemon=True).start()
