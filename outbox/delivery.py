"""The transports: send emails (a batch over one SMTP session) or one webhook, and classify
each message's outcome as a `Result`. Nothing here touches the database.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import smtplib
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.message import sanitize_address
from django.core.mail.utils import DNS_NAME
from django.utils.html import escape

from outbox import conf, signing
from outbox.webhook_connect import webhook_connection

if TYPE_CHECKING:
    from outbox.models import OutboundMessage

# SENT: the receiver took it. TRANSIENT: refused for now (a recipient answered 4xx), retried
# later at the cost of one attempt. PERMANENT: refused for good (SMTP 5xx, HTTP 4xx).
# OUTAGE: the destination itself is unavailable (refused or timed out, 421, a 4xx to MAIL,
# HTTP 5xx/429): the breaker counts it and the message keeps its attempt. AMBIGUOUS: the
# connection died after the whole message was sent and before the reply: the receiver may
# have it. In a batch, a message not tried (the session died first) has no result (None).
SENT, TRANSIENT, PERMANENT, OUTAGE, AMBIGUOUS = "sent", "transient", "permanent", "outage", "ambiguous"

SMTP_DESTINATION = "smtp"


@dataclass(frozen=True)
class Result:
    outcome: str
    status_code: int | None = None
    error: str = ""


def email_destination() -> str:
    # One relay per deployment: every email shares one breaker and one batch queue.
    return SMTP_DESTINATION


def webhook_destination(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"webhook:{(parts.hostname or '').lower()}:{port}"


def _classify_smtp_code(code: int, error: str) -> Result:
    # RFC 5321: 4xx is a transient negative reply (try again later), 5xx is permanent.
    if code >= 500:
        return Result(PERMANENT, code, error)
    return Result(TRANSIENT, code, error)


def build_email(message: OutboundMessage) -> EmailMultiAlternatives:
    headers: dict[str, Any] = dict(message.headers or {})
    headers["Message-ID"] = message.message_id
    subject, text, html = message.content()
    email = EmailMultiAlternatives(
        subject=subject,
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(message.to),
        headers=headers,
    )
    if html:
        email.attach_alternative(html, "text/html")
    return email


def _envelope(email: EmailMultiAlternatives) -> tuple[str, list[str], bytes]:
    # Exactly what Django's SMTP backend sends.
    encoding = email.encoding or settings.DEFAULT_CHARSET
    from_email = sanitize_address(email.from_email, encoding)
    recipients = [sanitize_address(addr, encoding) for addr in email.recipients()]
    return from_email, recipients, email.message().as_bytes(linesep="\r\n")  # type: ignore[call-arg]


# --- Shared bodies: the bytes built once per letter, not once per message ----------------------

# Stand-ins for what differs per message in a letter's headers (letters, digits, dots:
# nothing an encoder would touch).
_TO_MARK = "to-7c1f3a9e@outbox.invalid"
_ID_MARK = "<id-7c1f3a9e@outbox.invalid>"
_DATE_MARK = b"date-7c1f3a9e"
_DATE_LINE = re.compile(rb"^Date: [^\r\n]*", re.MULTILINE)
# Header lines the generator would fold (compat32 folds above 78 characters).
_FOLD_AT = 78
# RFC 5322's line limit; above it Django switches the part to quoted-printable.
_LINE_LIMIT = 998


@dataclass(frozen=True)
class _Letter:
    """A shared body's email as Django builds it, with stand-ins where messages differ."""

    from_email: str
    head: bytes  # the header block, To / Date / Message-ID as stand-ins
    text: bytes  # the body up to the HTML part: fills go in as given
    html: bytes  # the HTML part (may be empty): fills go in escaped
    eight_bit: bool  # every part is 8bit: any UTF-8 value may go in
    longest: int  # the longest body line
    marks: frozenset[str]  # the stand-ins checked to appear as they are


_letters: dict[tuple[Any, ...], _Letter | None] = {}


def _letter(message: OutboundMessage) -> _Letter | None:
    body = message.body
    assert body is not None
    headers = dict(message.headers or {})
    key = (
        body.pk,
        body.digest,
        tuple(headers.items()),  # e.g. a Reply-To: built into the shared bytes, in order
        settings.DEFAULT_FROM_EMAIL,
        settings.DEFAULT_CHARSET,
        settings.EMAIL_USE_LOCALTIME,
    )
    if key in _letters:
        return _letters[key]
    if len(_letters) > 256:
        _letters.clear()
    letter: _Letter | None = None
    email = EmailMultiAlternatives(
        subject=body.subject,
        body=body.text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[_TO_MARK],
        headers={**headers, "Message-ID": _ID_MARK},  # the order build_email uses
    )
    if body.html:
        email.attach_alternative(body.html, "text/html")
    from_email, _, raw = _envelope(email)
    head, sep, rest = raw.partition(b"\r\n\r\n")
    head = _DATE_LINE.sub(b"Date: " + _DATE_MARK, head, count=1)
    at = rest.find(b"Content-Type: text/html") if body.html else -1
    text, html = (rest[:at], rest[at:]) if at >= 0 else (rest, b"")
    parts = 2 if body.html else 1
    fills_in_body = all(
        # Not re-encoded (quoted-printable or base64 would split or hide a stand-in).
        rest.count(mark.encode()) == body.text.count(mark) + body.html.count(mark)
        for mark in (message.fills or {})
    )
    if (
        sep
        and head.count(_TO_MARK.encode()) == 1
        and head.count(_ID_MARK.encode()) == 1
        and head.count(_DATE_MARK) == 1
        and not any(mark in body.subject for mark in (message.fills or {}))
        and fills_in_body
    ):
        letter = _Letter(
            from_email=from_email,
            head=head + sep,
            text=text,
            html=html,
            eight_bit=rest.count(b"Content-Transfer-Encoding: 8bit") == parts,
            longest=max((len(line) for line in rest.split(b"\r\n")), default=0),
            marks=frozenset(message.fills or {}),
        )
    _letters[key] = letter
    return letter


def email_bytes(message: OutboundMessage) -> tuple[str, list[str], bytes]:
    """(from, recipients, the message's bytes) as sent.

    A message on a shared body is built from that body's bytes, made once per process,
    with its own To, Date, Message-ID and fills put in: the same bytes Django would
    build but for the MIME boundary. Anything the shortcut cannot reproduce exactly (long
    or non-ASCII header values, a value that would need re-encoding) goes through
    Django's EmailMessage as before. Extra headers (the same for every message of a
    letter, such as a Reply-To) are part of the shared bytes.
    """
    if message.body_id is not None:
        letter = _letter(message)
        if letter is not None:
            built = _fill_letter(letter, message)
            if built is not None:
                return built
    return _envelope(build_email(message))


def _fill_letter(letter: _Letter, message: OutboundMessage) -> tuple[str, list[str], bytes] | None:
    if not letter.marks.issuperset(message.fills or {}):
        return None
    to = list(message.to)
    to_line = ", ".join(to)
    date = formatdate(localtime=settings.EMAIL_USE_LOCALTIME)
    if (
        not to_line.isascii()
        or len("To: " + to_line) > _FOLD_AT
        or len("Message-ID: " + message.message_id) > _FOLD_AT
        or not message.message_id.isascii()
    ):
        return None
    text, html = letter.text, letter.html
    for mark, value in (message.fills or {}).items():
        plain = value.encode()
        escaped = str(escape(value)).encode()
        if (not letter.eight_bit and not value.isascii()) or letter.longest + len(escaped) > _LINE_LIMIT:
            return None
        if "\r" in value or "\n" in value:
            return None  # a line break would change line endings and lengths
        text = text.replace(mark.encode(), plain)
        html = html.replace(mark.encode(), escaped)
    head = (
        letter.head.replace(_TO_MARK.encode(), to_line.encode())
        .replace(_ID_MARK.encode(), message.message_id.encode())
        .replace(_DATE_MARK, date.encode())
    )
    return letter.from_email, to, head + text + html


# --- SMTP -------------------------------------------------------------------------------------


class _Tracking:
    """Knows whether the whole message went out in DATA (the end-of-data dot was written).

    After that moment a lost connection is ambiguous: the server may have queued the
    message before the reply got lost. Before it, nothing can have been delivered.
    """

    payload_sent = False
    _in_data = False

    def send(self, s: Any) -> None:
        super().send(s)  # type: ignore[misc]
        if self._in_data and isinstance(s, bytes) and s.endswith(b"\r\n.\r\n"):
            self.payload_sent = True

    def data(self, msg: Any) -> tuple[int, bytes]:
        self._in_data = True
        try:
            return super().data(msg)  # type: ignore[misc,no-any-return]
        finally:
            self._in_data = False


class _Session(_Tracking, smtplib.SMTP):
    pass


class _SSLSession(_Tracking, smtplib.SMTP_SSL):
    pass


def _open_session() -> smtplib.SMTP:
    host, port = settings.EMAIL_HOST, int(settings.EMAIL_PORT)
    timeout = settings.EMAIL_TIMEOUT or 10
    session: smtplib.SMTP
    if settings.EMAIL_USE_SSL:
        session = _SSLSession(
            host,
            port,
            local_hostname=DNS_NAME.get_fqdn(),
            timeout=timeout,
            context=ssl.create_default_context(),
        )
    else:
        session = _Session(host, port, local_hostname=DNS_NAME.get_fqdn(), timeout=timeout)
    try:
        if settings.EMAIL_USE_TLS:
            session.starttls(context=ssl.create_default_context())
        if settings.EMAIL_HOST_USER:
            session.login(settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD)
    except BaseException:
        with contextlib.suppress(Exception):
            session.close()
        raise
    return session


class _SessionCache(threading.local):
    """One open SMTP session per process (per thread), reused across batches.

    Dropped after any connection-level error (its state is unknown), when it has been
    idle too long, and when the email settings change.
    """

    session: Any = None
    key: tuple[Any, ...] = ()
    last_used: float = 0.0


_cache = _SessionCache()


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
    session, _cache.session = _cache.session, None
    if session is not None:
        # Closing a dead connection may fail; it is gone either way.
        with contextlib.suppress(Exception):
            session.quit()
        with contextlib.suppress(Exception):
            session.close()


def _cached_session() -> tuple[smtplib.SMTP, bool]:
    """(an open session, whether it was reused)."""
    key = _settings_key()
    fresh = time.monotonic() - _cache.last_used < conf.smtp_idle_seconds()
    if _cache.session is not None and _cache.key == key and fresh:
        return _cache.session, True
    close_cached_connection()
    session = _open_session()
    _cache.session, _cache.key, _cache.last_used = session, key, time.monotonic()
    return session, False


def _smtp_backend_in_use() -> bool:
    return str(settings.EMAIL_BACKEND) == "django.core.mail.backends.smtp.EmailBackend"


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        text = (
            exc.smtp_error.decode(errors="replace")
            if isinstance(exc.smtp_error, bytes)
            else str(exc.smtp_error)
        )
        return f"{type(exc).__name__}: {exc.smtp_code} {text}"
    return f"{type(exc).__name__}: {exc}"


def send_email_batch(
    messages: Sequence[OutboundMessage],
    on_sent: Callable[[int], None] | None = None,
    deadline: float | None = None,
) -> list[Result | None]:
    """Send `messages` in order over one SMTP session; one result per message.

    Stops at the first sign that the server itself is unavailable (OUTAGE) or that the
    session died (AMBIGUOUS): the messages after it are not tried (None). `on_sent(i)`
    is called the moment message i is accepted. No message is started after `deadline`
    (time.monotonic()): the claim's lease must outlast the batch, so a slow batch stops
    early and gives the rest back rather than let another worker reclaim them mid-send.
    """
    if not _smtp_backend_in_use():
        return _send_each_with_backend(messages, on_sent, deadline)
    results: list[Result | None] = [None] * len(messages)
    batch = _SmtpBatch()
    for index, message in enumerate(messages):
        if _past_deadline(index, deadline):
            break
        result = results[index] = batch.send(email_bytes(message))
        if result.outcome in (OUTAGE, AMBIGUOUS):
            break
        if on_sent is not None and result.outcome == SENT:
            on_sent(index)
        _cache.last_used = time.monotonic()
    return results


def _past_deadline(index: int, deadline: float | None) -> bool:
    # The first message always goes: a batch makes progress however late it starts.
    return bool(index) and deadline is not None and time.monotonic() > deadline


def _send_each_with_backend(
    messages: Sequence[OutboundMessage], on_sent: Callable[[int], None] | None, deadline: float | None
) -> list[Result | None]:
    results: list[Result | None] = [None] * len(messages)
    for index, message in enumerate(messages):
        if _past_deadline(index, deadline):
            break
        result = results[index] = _send_with_backend(message)
        if on_sent is not None and result.outcome == SENT:
            on_sent(index)
    return results


class _SmtpBatch:
    """One batch's use of the cached SMTP session: which session, and what it has seen."""

    def __init__(self) -> None:
        self.session: smtplib.SMTP | None = None
        self.reused = False
        self.exchanged = False  # any command answered on this session in this batch

    def send(self, envelope: tuple[str, list[str], bytes]) -> Result:
        result = self._try(envelope, first=True)
        if result is None:
            # The server closed our idle session before this message started; nothing was
            # sent on it, so one immediate try on a new session costs no attempt.
            close_cached_connection()
            self.session = None
            result = self._try(envelope, first=False)
            assert result is not None  # only a first try asks for another
        return result

    def _stale(self, first: bool) -> bool:
        return first and self.reused and not self.exchanged

    def _try(self, envelope: tuple[str, list[str], bytes], *, first: bool) -> Result | None:
        """The message's outcome, or None to try once more on a new session."""
        if self.session is None:
            try:
                self.session, self.reused = _cached_session()
            except (smtplib.SMTPException, OSError) as exc:
                close_cached_connection()
                code = exc.smtp_code if isinstance(exc, smtplib.SMTPResponseException) else None
                return Result(OUTAGE, code, f"connect: {_error_text(exc)}")
        tracked: Any = self.session
        tracked.payload_sent = False
        try:
            self.session.sendmail(*envelope)
        except smtplib.SMTPRecipientsRefused as exc:
            self.exchanged = True
            return _recipients_refused(exc)
        except smtplib.SMTPResponseException as exc:
            if exc.smtp_code == 421 and self._stale(first):
                return None  # the idle session timed out (421) before this message
            self.exchanged = True
            return _answered(exc)
        except (smtplib.SMTPException, OSError) as exc:
            if tracked.payload_sent:
                close_cached_connection()
                return Result(AMBIGUOUS, None, f"connection lost after DATA: {_error_text(exc)}")
            if self._stale(first):
                return None
            close_cached_connection()
            return Result(OUTAGE, None, _error_text(exc))
        self.exchanged = True
        return Result(SENT)


def _recipients_refused(exc: smtplib.SMTPRecipientsRefused) -> Result:
    codes = [code for code, _ in exc.recipients.values()]
    # A recipient refused with 4xx (mailbox busy, greylisting) may be accepted later.
    code = min(codes) if codes and min(codes) < 500 else (max(codes) if codes else 550)
    detail = "; ".join(f"{rcpt}: {c} {m.decode(errors='replace')}" for rcpt, (c, m) in exc.recipients.items())
    return _classify_smtp_code(code, f"recipient refused: {detail}")


def _answered(exc: smtplib.SMTPResponseException) -> Result:
    code = exc.smtp_code
    if code == 421 or (400 <= code < 500 and not isinstance(exc, smtplib.SMTPDataError)):
        # The server as a whole says "not now" (closing, or refusing MAIL).
        close_cached_connection()
        return Result(OUTAGE, code, _error_text(exc))
    # An explicit answer about this message; the session stays usable (smtplib sent RSET).
    return _classify_smtp_code(code, _error_text(exc))


def _send_with_backend(message: OutboundMessage) -> Result:
    # Non-SMTP backends (file, console, locmem in tests): no session to manage.
    try:
        sent = get_connection(fail_silently=False).send_messages([build_email(message)])
    except Exception as exc:  # noqa: BLE001 - any backend error is a retryable failure
        return Result(TRANSIENT, None, _error_text(exc))
    if not sent:
        return Result(TRANSIENT, None, "the email backend reported nothing sent")
    return Result(SENT)


# --- Webhooks ---------------------------------------------------------------------------------


def webhook_body(payload: Any) -> bytes:
    # Canonical JSON, so the signed bytes are the bytes sent and are stable across retries.
    return json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


def webhook_event(message: OutboundMessage) -> str:
    """The event the sender named (its `X-Status-Event` header), else the payload's
    meta.event, else the purpose."""
    named = (message.headers or {}).get("X-Status-Event")
    if isinstance(named, str) and named:
        return named
    payload = message.payload if isinstance(message.payload, dict) else {}
    meta = payload.get("meta")
    event = meta.get("event") if isinstance(meta, dict) else None
    return event if isinstance(event, str) and event else message.purpose


def send_webhook(message: OutboundMessage) -> Result:
    parts = urlsplit(message.url)
    connection = webhook_connection(parts.scheme, parts.hostname or "", parts.port)
    if isinstance(connection, str):
        # Unresolvable: the destination is unavailable (an outage), like a refused connect.
        return Result(OUTAGE, None, connection)
    if connection is None:
        return Result(PERMANENT, None, f"refused: {parts.hostname} resolves to a private or loopback address")
    body = webhook_body(message.payload)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"{settings.SITE_NAME} webhooks",
        # Standard Webhooks 1.0 (and, for a secret in the old form, the sha256= pair).
        **signing.signature_headers(
            secret=message.secret,
            msg_id=signing.webhook_id(message.idempotency_key),
            timestamp=timestamp,
            body=body,
        ),
        "X-Status-Delivery": message.message_id,
        # The event name, so a receiver can route on a header; `purpose` is our handler
        # registry's name, not the receiver's business.
        "X-Status-Event": webhook_event(message),
    }
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        try:
            connection.connect()
            connection.request("POST", path, body=body, headers=headers)
        except (OSError, http.client.HTTPException) as exc:
            # Not all of the body reached the receiver: nothing can have been processed.
            return Result(OUTAGE, None, f"{type(exc).__name__}: {exc}")
        try:
            response = connection.getresponse()
            status = response.status
            response.read(65536)
        except (OSError, http.client.HTTPException) as exc:
            return Result(AMBIGUOUS, None, f"no answer after the body was sent: {type(exc).__name__}: {exc}")
    finally:
        connection.close()
    if 200 <= status < 300:
        return Result(SENT, status)
    if status in (408, 425, 429) or status >= 500:
        # The host is overloaded or down: an outage of the destination, not of this message.
        return Result(OUTAGE, status, f"HTTP {status}")
    return Result(PERMANENT, status, f"HTTP {status}")
