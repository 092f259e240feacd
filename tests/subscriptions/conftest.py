"""Fixtures for subscriptions: a real SMTP server, a real HTTP webhook receiver, products.

The SMTP server is the outbox tests' aiosmtpd sink (tests/outbox/smtp.py). The webhook
receiver is a stdlib http.server in a thread that answers with a scripted sequence of
status codes and records every request it got.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse, urlunparse

import pytest

from incidents.models import Product
from tests.builders import make_product

# 13 unless SUBS_TEST_REDIS_DB says otherwise (parallel runs on one Redis server).
SUBS_REDIS_DB = int(os.environ.get("SUBS_TEST_REDIS_DB", "13"))


@pytest.fixture(autouse=True)
def _subscription_settings(settings: Any) -> None:
    settings.SITE_URL = "http://testserver"
    # The webhook receiver listens on 127.0.0.1.
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_ALLOW_HTTP = True
    # In-process (eager) mode retries through the sweeper; no waiting in tests.
    settings.OUTBOX_RETRY_BASE_DELAY = 0
    settings.OUTBOX_RETRY_MAX_DELAY = 0
    settings.OUTBOX_SWEEP_GRACE_SECONDS = 0
    settings.WEBHOOK_TIMEOUT = 3


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    url: str = ""
    # Status codes to answer with, in order; once used up, 200.
    script: list[int] = field(default_factory=list)
    requests: list[ReceivedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_status(self) -> int:
        with self.lock:
            return self.script.pop(0) if self.script else 200


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with receiver.lock:
                receiver.requests.append(
                    ReceivedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
            status = receiver.next_status()
            payload = b'{"ok": true}' if status < 400 else b'{"error": "scripted failure"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/status"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def gmail(db: None) -> Product:
    return make_product("Gmail", position=1)


@pytest.fixture
def cloud_storage(db: None) -> Product:
    return make_product("Cloud Storage", slug="cloud-storage", position=2)


@pytest.fixture
def subs_redis_url(redis_url: str) -> str:
    """The Redis test server, on the database number reserved for these tests."""
    parsed = urlparse(redis_url)
    return urlunparse(parsed._replace(path=f"/{SUBS_REDIS_DB}"))


@pytest.fixture
def broker(subs_redis_url: str) -> Iterator[Any]:
    """Point this process's Celery app at the real Redis (db 13), not eager.

    The database is flushed before and after, so nothing queued leaks between tests.
    """
    import redis

    from statuspage.celery import app

    client = redis.Redis.from_url(subs_redis_url)
    client.flushdb()
    saved = {
        "broker_url": app.conf.broker_url,
        "task_always_eager": app.conf.task_always_eager,
        "broker_transport_options": app.conf.broker_transport_options,
    }
    conf: Any = app.conf
    conf.broker_url = subs_redis_url
    conf.task_always_eager = False
    conf.broker_transport_options = {
        "visibility_timeout": 30,
        "socket_connect_timeout": 1,
        "socket_timeout": 2,
    }
    anyapp: Any = app
    anyapp._pool = None  # connections are pooled per broker URL: drop the memory:// ones
    anyapp.amqp._producer_pool = None
    try:
        yield client
    finally:
        for key, value in saved.items():
            setattr(conf, key, value)
        anyapp._pool = None
        anyapp.amqp._producer_pool = None
        client.flushdb()
        client.close()
