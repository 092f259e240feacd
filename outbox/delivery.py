"""The transports: send one email or one webhook and classify what happened.

Nothing here touches the database. Each function returns a `Result` saying whether the
message went out, failed for a reason that may pass (retry later) or failed for good.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
import smtplib
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection

from outbox import conf

if TYPE_CHECKING:
    from outbox.models import OutboundMessage

SENT, TRANSIENT, PERMANENT = "sent", "transient", "permanent"


@dataclass(frozen=True)
class Result:
    outcome: str
    status_code: int | None = None
    error: str = ""


def _classify_smtp_code(code: int, error: str) -> Result:
    # RFC 5321: 4xx is a transient negative reply (try again later), 5xx is permanent.
    if 400 <= code < 500:
        return Result(TRANSIENT, code, error)
    if code >= 500:
        return Result(PERMANENT, code, error)
    return Result(TRANSIENT, code, error)


def build_email(message: OutboundMessage) -> EmailMultiAlternatives:
    headers: dict[str, Any] = dict(message.headers or {})
    headers["Message-ID"] = message.message_id
    email = EmailMultiAlternatives(
        subject=message.subject,
        body=message.body_text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(message.to),
        headers=headers,
    )
    if message.body_html:
        email.attach_alternative(message.body_html, "text/html")
    return email


class _ConnectionCache(threading.local):
    """One open email connection per process (per thread), reused across messages.

    A new SMTP session per message costs a TCP handshake and EHLO; keeping one open
    roughly doubles throughput. The connection is dropped after any error (its session
    state is unknown), when it has been idle too long, and when the email settings change.
    """

    backend: Any = None
    key: tuple[Any, ...] = ()
    last_used: float = 0.0


_cache = _ConnectionCache()


def _settings_key() -> tuple[Any, ...]:
    return tuple(
        getattr(settings, name, None)
        for name in (
            "EMAIL_BACKEND",
            "EMAIL_HOST",
            "EMAIL_PORT",
            "EMAIL_HOST_USER",
            "EMAIL_USE_TLS",
            "EMAIL_USE_SSL",
        )
    )


def close_cached_connection() -> None:
    backend, _cache.backend = _cache.backend, None
    if backend is not None:
        # Closing a dead connection may fail; it is gone either way.
        with contextlib.suppress(Exception):
            backend.close()


def _connection() -> tuple[Any, bool]:
    """(an open backend, whether it was reused)."""
    key = _settings_key()
    fresh = time.monotonic() - _cache.last_used < conf.smtp_idle_seconds()
    if _cache.backend is not None and _cache.key == key and fresh:
        return _cache.backend, True
    close_cached_connection()
    backend = get_connection(fail_silently=False)
    backend.open()
    _cache.backend, _cache.key = backend, key
    return backend, False


def _send_once(email: EmailMultiAlternatives) -> int:
    backend, reused = _connection()
    try:
        sent = backend.send_messages([email])
    except (smtplib.SMTPServerDisconnected, smtplib.SMTPResponseException) as exc:
        close_cached_connection()
        idle_closed = isinstance(exc, smtplib.SMTPServerDisconnected) or exc.smtp_code == 421
        if not (reused and idle_closed):
            raise
        # The server closed our idle session (silently, or with 421) before taking this
        # message, so one immediate try on a new connection is safe and costs no attempt.
        backend, _ = _connection()
        try:
            sent = backend.send_messages([email])
        except BaseException:
            close_cached_connection()
            raise
    except BaseException:
        close_cached_connection()
        raise
    _cache.last_used = time.monotonic()
    return int(sent or 0)


def send_email(message: OutboundMessage) -> Result:
    email = build_email(message)
    try:
        sent = _send_once(email)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        # A recipient refused with 4xx (mailbox busy, greylisting) may be accepted later.
        code = min(codes) if codes and min(codes) < 500 else (max(codes) if codes else 550)
        detail = "; ".join(
            f"{rcpt}: {c} {m.decode(errors='replace')}" for rcpt, (c, m) in exc.recipients.items()
        )
        return _classify_smtp_code(code, f"recipient refused: {detail}")
    except smtplib.SMTPResponseException as exc:
        text = (
            exc.smtp_error.decode(errors="replace")
            if isinstance(exc.smtp_error, bytes)
            else str(exc.smtp_error)
        )
        return _classify_smtp_code(exc.smtp_code, f"{type(exc).__name__}: {exc.smtp_code} {text}")
    except (smtplib.SMTPException, OSError) as exc:
        # Connection refused, reset, timed out, or the server hung up: try again later.
        return Result(TRANSIENT, None, f"{type(exc).__name__}: {exc}")
    if not sent:
        return Result(TRANSIENT, None, "the email backend reported nothing sent")
    return Result(SENT)


def webhook_body(payload: Any) -> bytes:
    # Canonical JSON, so the signed bytes are the bytes sent and are stable across retries.
    return json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


def webhook_event(message: OutboundMessage) -> str:
    payload = message.payload if isinstance(message.payload, dict) else {}
    meta = payload.get("meta")
    event = meta.get("event") if isinstance(meta, dict) else None
    return event if isinstance(event, str) and event else message.purpose


def webhook_signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _host_is_private(host: str) -> bool:
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False  # unresolvable: the request itself will fail as a transient error
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            return True
    return False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A receiver must answer itself: following redirects would let a URL that passed
    # validation bounce the signed request somewhere else (for example an internal host).
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def send_webhook(message: OutboundMessage) -> Result:
    host = urlsplit(message.url).hostname or ""
    if not conf.webhook_allow_private() and _host_is_private(host):
        return Result(PERMANENT, None, f"refused: {host} resolves to a private or loopback address")
    body = webhook_body(message.payload)
    timestamp = int(time.time())
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked at enqueue (http/https)
        message.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": f"{getattr(settings, 'SITE_NAME', 'Status')} webhooks",
            "X-Status-Timestamp": str(timestamp),
            "X-Status-Signature": webhook_signature(message.secret, timestamp, body),
            "X-Status-Delivery": message.message_id,
            # The event name (the payload's meta.event), so a receiver can route on a
            # header; `purpose` is our handler registry's name, not the receiver's business.
            "X-Status-Event": webhook_event(message),
        },
    )
    try:
        with _opener.open(request, timeout=conf.webhook_timeout()) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        return Result(TRANSIENT, None, f"{type(exc).__name__}: {exc}")
    if 200 <= status < 300:
        return Result(SENT, status)
    if status in (408, 425, 429) or status >= 500:
        return Result(TRANSIENT, status, f"HTTP {status}")
    return Result(PERMANENT, status, f"HTTP {status}")
