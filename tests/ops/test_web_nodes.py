"""Two web nodes behind one nginx upstream; one of them killed during load (issue 34).

Two gunicorn servers (docker/gunicorn.conf.py, one process of four threads each, as two
small machines) on the test database and one Redis, behind an nginx upstream that passes
a failed request to the other node (`proxy_next_upstream`). Bounded load from a few client
threads: every public page request must succeed before, during and after one node is
killed with SIGKILL; the requests per second with two nodes and with one are printed
(docs/scaling.md quotes them).
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.db import connections

from incidents.models import ImpactWindow
from tests.builders import make_incident, make_product, utc
from tests.conftest import service_missing
from tests.faults import free_port
from tests.outbox.worker import database_url
from tests.waiting import poll, wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
PATHS = ["/", "/products/gmail/", "/badge.svg", "/history/", "/api/v2/summary.json"]
CLIENTS = 6


@pytest.fixture
def world(postgres: None) -> None:
    gmail = make_product("Gmail")
    make_product("Cloud Storage", position=1)
    make_incident(product=gmail, start=utc(2026, 11, 20, 19, 45), level=ImpactWindow.Level.MAJOR_OUTAGE)


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


class Node:
    """One gunicorn server on its own port, in its own process group."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        command = [str(Path(sys.executable).with_name("gunicorn")), "--config", "docker/gunicorn.conf.py"]
        self.proc = subprocess.Popen(
            [*command, "statuspage.wsgi"],
            cwd=ROOT,
            env={**env, "GUNICORN_BIND": f"127.0.0.1:{self.port}"},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited early:\n{self.log.read_text()}")
        return _get(self.port, "/robots.txt") == 200

    def log_text(self) -> str:
        return self.log.read_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=20)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)  # gunicorn's quick shutdown
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


NGINX_CONF = """
{user}
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream web {{
        server 127.0.0.1:{a} max_fails=1 fail_timeout=10s;
        server 127.0.0.1:{b} max_fails=1 fail_timeout=10s;
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://web;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_connect_timeout 1s;
            proxy_read_timeout 25s;
            # A node that refuses, resets or sheds load: the request goes to the other.
            proxy_next_upstream error timeout http_502 http_503 http_504;
            proxy_next_upstream_tries 2;
        }}
    }}
}}
"""


@pytest.fixture
def nodes(world: None, redis_url: str, tmp_path: Path) -> Iterator[tuple[list[Node], int]]:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if nginx is None:
        service_missing("nginx is not installed (apt-get install nginx-light)")
    assert nginx is not None
    redis.Redis.from_url(redis_url).flushdb()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    env.update(
        DATABASE_URL=database_url(),
        REDIS_URL=redis_url,
        VAR_DIR=str(tmp_path),
        ALLOWED_HOSTS="127.0.0.1",
        DEBUG="0",
        DB_CONN_MAX_AGE="0",
        GUNICORN_WORKERS="1",
        GUNICORN_THREADS="4",
        GUNICORN_ACCESSLOG="/dev/null",
        PUBLIC_PRERENDER_ON_CHANGE="0",
    )
    started = [Node(env, tmp_path / f"node{i}.log") for i in (1, 2)]
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    port = free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user="user root;" if os.geteuid() == 0 else "",
            prefix=prefix,
            a=started[0].port,
            b=started[1].port,
            port=port,
        )
    )
    proxy = subprocess.Popen(
        [nginx, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=(prefix / "stderr.log").open("wb"),
        start_new_session=True,
    )
    try:
        for node in started:
            wait_for(node.ready, timeout=60, message=node.log_text)
        wait_for(lambda: _get(port, "/robots.txt") == 200, timeout=30, message=lambda: str(prefix))
        yield started, port
    finally:
        if proxy.poll() is None:
            os.killpg(proxy.pid, signal.SIGQUIT)
            try:
                proxy.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proxy.pid, signal.SIGKILL)
        for node in started:
            node.stop()
        _wait_for_other_sessions()


def _wait_for_other_sessions() -> None:
    """The servers' database sessions end a moment after they exit; the test database is
    flushed only after that."""

    def alone() -> bool:
        with connections["default"].cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            return not cursor.fetchone()[0]

    poll(alone, timeout=10, interval=0.1)


def _load(port: int, seconds: float, during: Callable[[], Any] | None = None) -> tuple[Counter[int], float]:
    """CLIENTS threads asking for PATHS in turn for `seconds`; `during` runs halfway."""
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = offset
        while time.monotonic() < stop:
            try:
                conn.request("GET", PATHS[i % len(PATHS)])
                response = conn.getresponse()
                response.read()
                status = response.status
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status = 0
            with lock:
                statuses[status] += 1
            i += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    if during is not None:
        time.sleep(seconds / 2)
        during()
    for thread in threads:
        thread.join(timeout=seconds + 60)
    return statuses, sum(statuses.values()) / (time.monotonic() - began)


def test_two_web_nodes_behind_nginx_survive_losing_one_during_load(nodes: tuple[list[Node], int]) -> None:
    started, port = nodes
    for path in PATHS:  # warm: every page rendered once and cached in the shared Redis
        assert _get(port, path) == 200, path
    two, two_rate = _load(port, 4.0)
    assert set(two) == {200}, f"with two nodes: {dict(two)}"
    during, during_rate = _load(port, 6.0, during=started[0].kill)
    assert started[0].proc.poll() is not None
    assert set(during) == {200}, f"while a node was killed: {dict(during)}"
    one, one_rate = _load(port, 4.0)
    assert set(one) == {200}, f"with one node left: {dict(one)}"
    print(
        f"\nweb nodes behind nginx ({CLIENTS} clients, {len(PATHS)} public paths): "
        f"two nodes {two_rate:.0f} req/s ({sum(two.values())} requests), "
        f"one killed during load {during_rate:.0f} req/s ({sum(during.values())}, all 200), "
        f"one node {one_rate:.0f} req/s ({sum(one.values())})"
    )
