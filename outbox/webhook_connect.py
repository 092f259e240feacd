"""Webhook connections pinned to the address that was checked.

The host is resolved once, every answer must be public (unless WEBHOOK_ALLOW_PRIVATE),
and the socket connects to that address: the Host header, TLS SNI and the certificate
check still use the URL's host name. See docs/subscriptions.md.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from typing import Any

from outbox import conf

_SockAddr = tuple[Any, ...]


@dataclass(frozen=True)
class _Target:
    """The one address a webhook goes to: resolved once, checked, then connected to."""

    family: int
    sockaddr: _SockAddr


def is_public_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _resolve_target(host: str, port: int) -> _Target | str | None:
    """Resolve once and check every answer; the connection then uses the first one.

    Resolving again at connect time would let a DNS answer that changed in between (a
    short TTL, a rebinding server) send the signed request to a private address.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return f"cannot resolve {host}: {exc}"
    if not infos:
        return f"cannot resolve {host}: no address"
    if not conf.webhook_allow_private() and not all(is_public_address(str(info[4][0])) for info in infos):
        return None
    family, _type, _proto, _name, sockaddr = infos[0]
    return _Target(family=family, sockaddr=tuple(sockaddr))


def _pinned_socket(target: _Target, timeout: float) -> socket.socket:
    sock = socket.socket(target.family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(target.sockaddr)
    except BaseException:
        sock.close()
        raise
    return sock


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the checked address; the Host header still names the URL's host."""

    def __init__(self, host: str, port: int | None, *, target: _Target, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._target = target

    def connect(self) -> None:
        self.sock = _pinned_socket(self._target, self.timeout)  # type: ignore[arg-type]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As above, over TLS: SNI and certificate checks are for the URL's host name."""

    def __init__(self, host: str, port: int | None, *, target: _Target, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._target = target

    def connect(self) -> None:
        sock = _pinned_socket(self._target, self.timeout)  # type: ignore[arg-type]
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def webhook_connection(scheme: str, host: str, port: int | None) -> http.client.HTTPConnection | str | None:
    """A connection pinned to the checked address; an error text when the host does not
    resolve; None when it resolves to an address that is not public (and that is refused)."""
    target = _resolve_target(host, port or (443 if scheme == "https" else 80))
    if not isinstance(target, _Target):
        return target
    # http.client follows no redirects: a receiver must answer itself, so a URL that
    # passed validation cannot bounce the signed request elsewhere (an internal host).
    cls = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
    return cls(host, port, target=target, timeout=conf.webhook_timeout())
