"""gunicorn settings for production. Every value can be overridden from the environment."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Threads keep cached reads cheap; processes spread the CPU-bound renders across cores.
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2))
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
