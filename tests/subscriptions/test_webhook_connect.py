"""Webhook delivery connects to the address it checked (no second DNS lookup)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from outbox import delivery
from outbox.models import OutboundMessage

PUBLIC = "93.184.216.34"


def _message(url: str) -> OutboundMessage:
    return OutboundMessage(
        channel=OutboundMessage.Channel.WEBHOOK,
        url=url,
        payload={"meta": {"event": "test"}},
        secret="s3cret",
        message_id="<m@example.com>",
        purpose="subscriptions.webhook",
    )


def _rebinding_resolver(first: str, then: str) -> Any:
    """A DNS server that answers `first` once, then `then` (a rebinding attack)."""
    calls: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        calls.append(str(host))
        address = first if len(calls) == 1 else then
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    getaddrinfo.calls = calls  # type: ignore[attr-defined]
    return getaddrinfo


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_it_connects_to_the_address_it_checked(monkeypatch: Any, settings: Any, scheme: str) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = False
    resolver = _rebinding_resolver(PUBLIC, "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    connected: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        connected.append(address)
        raise ConnectionRefusedError("recorded, not sent")

    monkeypatch.setattr(socket.socket, "connect", connect)
    result = delivery.send_webhook(_message(f"{scheme}://hooks.rebind.example/in"))
    port = 443 if scheme == "https" else 80
    assert connected == [(PUBLIC, port)]  # never 127.0.0.1
    assert resolver.calls == ["hooks.rebind.example"]  # resolved once
    assert result.outcome == delivery.OUTAGE


def test_it_refuses_a_host_with_any_private_answer(monkeypatch: Any, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = False
    monkeypatch.setattr(socket, "getaddrinfo", _rebinding_resolver("10.0.0.8", PUBLIC))
    result = delivery.send_webhook(_message("https://hooks.rebind.example/in"))
    assert result.outcome == delivery.PERMANENT
    assert "private or loopback" in result.error


class _Handler(BaseHTTPRequestHandler):
    hosts: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).hosts.append(self.headers["Host"])
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[HTTPServer]:
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_the_host_header_still_names_the_url_host(
    monkeypatch: Any, settings: Any, server: HTTPServer
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    monkeypatch.setattr(socket, "getaddrinfo", _rebinding_resolver("127.0.0.1", "192.0.2.1"))
    port = server.server_address[1]
    result = delivery.send_webhook(_message(f"http://receiver.example:{port}/in"))
    assert result.outcome == delivery.SENT and result.status_code == 204
    assert _Handler.hosts[-1] == f"receiver.example:{port}"


def test_tls_verifies_the_url_host_name_not_the_address(monkeypatch: Any, settings: Any) -> None:
    import ssl

    settings.WEBHOOK_ALLOW_PRIVATE = False
    monkeypatch.setattr(socket, "getaddrinfo", _rebinding_resolver(PUBLIC, "127.0.0.1"))
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: None)
    names: list[Any] = []

    def wrap_socket(self: ssl.SSLContext, sock: Any, server_hostname: Any = None, **kw: Any) -> Any:
        names.append((server_hostname, self.verify_mode, self.check_hostname))
        raise ssl.SSLError("recorded, not sent")

    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", wrap_socket)
    result = delivery.send_webhook(_message("https://hooks.rebind.example/in"))
    assert names == [("hooks.rebind.example", ssl.CERT_REQUIRED, True)]
    assert result.outcome == delivery.OUTAGE
