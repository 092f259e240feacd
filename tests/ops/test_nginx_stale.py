"""docker/nginx.conf marks a cached copy it serves past its second (soak, issue 37: the
answers nginx served stale from its micro-cache carried no marker, so a reader could not
tell them from fresh ones). Real nginx with the production file (rewritten for loopback as
the soak does), in front of a small upstream the test can slow down and stop."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.soak.stack import nginx_conf
from tests.conftest import service_missing
from tests.faults import free_port
from tests.waiting import wait_for


class Upstream:
    """Answers every GET with 200 and a numbered body, after `delay` seconds."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.served = 0
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(upstream.delay)
                upstream.served += 1
                body = f'{{"render": {upstream.served}}}'.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _get(port: int, path: str = "/api/v2/summary.json") -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _up(port: int) -> bool:
    try:
        return _get(port)[0] == 200
    except OSError:
        return False


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[Upstream, int]]:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if nginx is None:
        service_missing("nginx is not installed (apt-get install nginx-light)")
    assert nginx is not None
    upstream = Upstream()
    prefix, snapshots, port = tmp_path / "nginx", tmp_path / "snapshots", free_port()
    (prefix / "cache").mkdir(parents=True)
    snapshots.mkdir()
    for path in (tmp_path, prefix, snapshots):
        path.chmod(0o755)
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_conf(prefix, listen=port, app=upstream.port, snapshots=snapshots))
    server = subprocess.Popen(
        [nginx, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL, stderr=(prefix / "stderr.log").open("wb"), start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: _up(port), timeout=20, message=lambda: (prefix / "stderr.log").read_text())
        yield upstream, port
    finally:
        os.killpg(server.pid, signal.SIGQUIT)
        server.wait(timeout=20)
        upstream.stop()


def test_a_fresh_copy_carries_no_marker(proxy: tuple[Upstream, int]) -> None:
    _upstream, port = proxy
    time.sleep(2.2)  # the warm-up's entry has expired (nginx counts whole seconds)
    status, headers, _body = _get(port)
    assert status == 200 and headers["x-cache"] in ("MISS", "EXPIRED")
    assert "x-status-snapshot" not in headers
    status, headers, _body = _get(port)
    assert headers["x-cache"] == "HIT" and "x-status-snapshot" not in headers


def test_a_copy_served_while_the_app_is_down_is_marked_stale(proxy: tuple[Upstream, int]) -> None:
    upstream, port = proxy
    _status, _headers, before = _get(port)
    upstream.stop()  # nothing listens: an error, and the expired entry is served
    time.sleep(2.2)
    status, headers, body = _get(port)
    assert (status, headers["x-cache"], body) == (200, "STALE", before)
    assert headers["x-status-snapshot"] == "stale"


def test_a_copy_served_while_another_request_refreshes_it_is_marked_stale(
    proxy: tuple[Upstream, int],
) -> None:
    upstream, port = proxy
    time.sleep(2.2)
    upstream.delay = 2.0
    refresh = threading.Thread(target=_get, args=(port,))
    refresh.start()  # takes the expired entry's update, and waits on the slow app
    time.sleep(0.5)
    status, headers, _body = _get(port)
    refresh.join()
    assert (status, headers["x-cache"]) == (200, "UPDATING")
    assert headers["x-status-snapshot"] == "stale"
