"""gunicorn settings for production. Every value can be overridden from the environment."""

from __future__ import annotations

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Threads keep cached reads cheap; processes spread the CPU-bound renders across cores.
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
# A short listen queue: beyond it the kernel refuses connections fast instead of holding
# a queue that grows while the herd keeps arriving. The load balancer retries elsewhere.
backlog = int(os.environ.get("GUNICORN_BACKLOG", 256))
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
