"""A real SMTP server (aiosmtpd) running in the test process, with fault switches.

It records every message it accepts (parsed, with its raw headers) and counts
connections, so tests can assert "received exactly once" and "connection attempts stayed
within the budget". Faults: answer MAIL with a 4xx/5xx while an outage is on, refuse given
recipients with a code, stall in RCPT (before any data is sent) to widen a kill window, or
drop the connection after DATA without replying; it counts closed sessions too, so a test
can wait for the server's idle timeout instead of sleeping. `BlackHole` is a server that accepts TCP
connections and never says a word (a hung SMTP server, a Redis that does not answer).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP

from tests.waiting import poll


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    raw: bytes

    @property
    def message_id(self) -> str:
        return str(self.message["Message-ID"])

    @property
    def header_names(self) -> list[str]:
        return [name.lower() for name in self.message]


@dataclass
class SinkHandler:
    messages: list[Received] = field(default_factory=list)
    connections: int = 0
    # Sessions (after EHLO) that ended, closed by either side, e.g. the server's idle timeout.
    disconnections: int = 0
    mail_commands: int = 0
    # Answer MAIL FROM with this (e.g. "451 4.3.0 Try again later") while set.
    mail_reply: str | None = None
    # Refuse these recipients (lowercased) with the given reply, e.g. "550 5.1.1 No such user".
    refuse_rcpt: dict[str, str] = field(default_factory=dict)
    rcpt_delay: float = 0.0
    # Take the whole message, then drop the connection without replying: the client
    # cannot know whether it was accepted (the ambiguous case).
    drop_after_data: bool = False
    # Set whenever a client is stalled in RCPT (a safe moment to kill the sender: nothing
    # of the message has been transmitted yet).
    in_rcpt: threading.Event = field(default_factory=threading.Event)
    rcpt_entered_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_EHLO(
        self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        with self.lock:
            self.connections += 1
        session.host_name = hostname
        return responses

    async def handle_MAIL(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        with self.lock:
            self.mail_commands += 1
            reply = self.mail_reply
        if reply:
            return reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        refused = self.refuse_rcpt.get(address.lower())
        if refused:
            return refused
        if self.rcpt_delay:
            self.rcpt_entered_at = time.monotonic()
            self.in_rcpt.set()
            await asyncio.sleep(self.rcpt_delay)
            self.in_rcpt.clear()
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = envelope.original_content or envelope.content
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        with self.lock:
            self.messages.append(
                Received(envelope.mail_from, list(envelope.rcpt_tos), parsed, raw)  # type: ignore[arg-type]
            )
        if self.drop_after_data:
            server.transport.abort()
        return "250 Message accepted for delivery"

    # --- helpers for assertions ---------------------------------------------------------

    def wait_early_in_rcpt(self, timeout: float = 10.0) -> bool:
        """Wait until a client has just entered the RCPT stall (less than a third of it
        gone), so that a kill issued now surely lands before any message data is sent."""
        return bool(
            poll(
                lambda: (
                    self.in_rcpt.is_set() and time.monotonic() - self.rcpt_entered_at < self.rcpt_delay / 3
                ),
                timeout=timeout,
                interval=0.002,
            )
        )

    def snapshot(self) -> list[Received]:
        with self.lock:
            return list(self.messages)

    def counts_by_message_id(self) -> Counter[str]:
        return Counter(m.message_id for m in self.snapshot())

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """The messages, once there are at least `count` (or all there are at `timeout`)."""
        return (
            poll(lambda: got if len(got := self.snapshot()) >= count else None, timeout=timeout)
            or self.snapshot()
        )


class _CountingSMTP(SMTP):
    def connection_lost(self, error: Exception | None) -> None:
        handler: SinkHandler = self.event_handler
        # Only sessions that said EHLO: the controller's own start-up probe does not.
        if self.session is not None and self.session.host_name:
            with handler.lock:
                handler.disconnections += 1
        super().connection_lost(error)


class _Controller(Controller):
    def factory(self) -> SMTP:
        return _CountingSMTP(self.handler, **self.SMTP_kwargs)


class SmtpSink:
    def __init__(self, **smtp_kwargs: Any) -> None:
        self.handler = SinkHandler()
        self.port = free_port()
        self.controller = _Controller(self.handler, hostname="127.0.0.1", port=self.port, **smtp_kwargs)

    def start(self) -> SmtpSink:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()


def run_sink(**smtp_kwargs: Any) -> Iterator[SmtpSink]:
    sink = SmtpSink(**smtp_kwargs).start()
    try:
        yield sink
    finally:
        sink.stop()


class BlackHole:
    """Accepts TCP connections on 127.0.0.1 and never reads or writes: a hung server."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted.append(conn)  # held open, never answered

    def __enter__(self) -> BlackHole:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        for conn in self.accepted:
            conn.close()
        self.sock.close()
