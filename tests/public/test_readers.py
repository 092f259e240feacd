"""WebSub and /llms.txt (issue 36): with a hub configured the feeds advertise it and a
public change pings it; without one the feeds are unchanged (the golden pages hold the
bytes); /llms.txt names addresses that answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest
from django.conf import settings
from django.test import Client

from incidents.models import Product
from statuspage.celery import app
from tests.builders import make_incident, make_product, utc


class _Hub(BaseHTTPRequestHandler):
    received: list[dict[str, list[str]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        _Hub.received.append(parse_qs(self.rfile.read(length).decode()))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hub(settings: Any) -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Hub.received = []
    settings.WEBSUB_HUB_URL = f"http://127.0.0.1:{server.server_port}/hub"
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield settings.WEBSUB_HUB_URL
    finally:
        app.conf.task_always_eager = eager
        server.shutdown()
        server.server_close()


@pytest.fixture
def gmail(db: None) -> Product:
    return make_product("Gmail")


def test_without_a_hub_the_feeds_name_none(gmail: Product) -> None:
    for path in ("/history.atom", "/history.rss", "/products/gmail/history.atom"):
        response = Client().get(path)
        assert response.status_code == 200
        assert b'rel="hub"' not in response.content
        assert "Link" not in response


def test_the_feeds_advertise_the_hub(hub: str, gmail: Product) -> None:
    for path in ("/history.atom", "/history.rss", "/products/gmail/history.rss"):
        response = Client().get(path)
        assert f'rel="hub" href="{hub}"'.encode() in response.content or (
            f'href="{hub}" rel="hub"'.encode() in response.content
        )
        assert response["Link"] == f'<{hub}>; rel="hub", <{settings.SITE_URL}{path}>; rel="self"'


@pytest.mark.django_db(transaction=True)
def test_a_public_change_pings_the_hub_after_commit(hub: str) -> None:
    product = make_product("Cloud Storage")
    _Hub.received = []
    make_incident(title="Write latency", product=product, start=utc(2026, 10, 8, 10))
    assert _Hub.received, "the hub heard nothing after the public change"
    ping = _Hub.received[-1]
    assert ping["hub.mode"] == ["publish"]
    assert f"{settings.SITE_URL}/history.atom" in ping["hub.url"]
    assert f"{settings.SITE_URL}/products/{product.slug}/history.rss" in ping["hub.url"]


def test_llms_txt_names_the_real_addresses(gmail: Product) -> None:
    response = Client().get("/llms.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    text = response.content.decode()
    assert text.startswith("# ")
    assert "\n> " in text and "\n## Feeds\n" in text and "\n## APIs\n" in text
    site = settings.SITE_URL
    for path in (
        "/history.atom",
        "/mcp",
        "/api/v1/status/",
        "/products/gmail/",
        "/api/v1/products/gmail/uptime/",
    ):
        assert f"]({site}{path})" in text
        assert Client().get(path).status_code in (200, 406), path  # every link answers (/mcp wants POST)
