"""The soak's receivers: an SMTP server that can refuse, drop the connection after DATA
and answer slowly, and a webhook receiver that can answer 500 and hang. Each keeps every
copy it took (the Message-ID or `X-Status-Delivery` of each), which the invariants count.

The SMTP side is a small asyncio server on the standard library, as
docker/sandbox/smtp/smtp_sink.py (the compose test's sink), plus the fault modes.
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.faults import free_port


class SmtpSink:
    """Modes: `ok`; `refuse` (nothing listens: connection refused); `drop` (the whole
    message is taken, then the connection closes without the 250: an ambiguous outcome
    for the sender); `slow` (2 s before the greeting and before each 250)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.mode = "ok"
        self.copies: Counter[str] = Counter()  # Message-ID -> messages taken
        self.dropped = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        self._call(self._listen())

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._session, "127.0.0.1", self.port, reuse_address=True)

    async def _unlisten(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def set_mode(self, mode: str) -> None:
        if mode == "refuse" and self.mode != "refuse":
            self._call(self._unlisten())
        elif mode != "refuse" and self.mode == "refuse":
            self._call(self._listen())
        self.mode = mode

    def _record(self, data: bytes) -> None:
        message = email.message_from_bytes(data, policy=email.policy.default)
        with self._lock:
            self.copies[str(message["Message-ID"]).strip()] += 1

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        slow = 2.0 if self.mode == "slow" else 0.0
        await asyncio.sleep(slow)
        writer.write(b"220 soak ESMTP\r\n")
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while line := await reader.readline():
                verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
                if verb == "DATA":
                    writer.write(b"354 end with .\r\n")
                    await writer.drain()
                    chunks = []
                    while (chunk := await reader.readline()) not in (b".\r\n", b".\n", b""):
                        chunks.append(chunk[1:] if chunk.startswith(b"..") else chunk)
                    self._record(b"".join(chunks))
                    if self.mode == "drop":
                        self.dropped += 1
                        break
                    await asyncio.sleep(2.0 if self.mode == "slow" else 0.0)
                    writer.write(b"250 OK queued\r\n")
                elif verb == "QUIT":
                    writer.write(b"221 bye\r\n")
                    await writer.drain()
                    break
                elif verb == "EHLO":
                    writer.write(b"250-soak\r\n250 8BITMIME\r\n")
                else:  # HELO, MAIL, RCPT, RSET, NOOP
                    writer.write(b"250 OK\r\n")
                await writer.drain()
        writer.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self._unlisten())
        self._loop.call_soon_threadsafe(self._loop.stop)


class WebhookReceiver:
    """Modes: `ok` (200), `fail` (500: not taken), `hang` (the body is read, then no
    answer for 15 s, past the sender's timeout: it may have been delivered)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.copies: Counter[str] = Counter()  # X-Status-Delivery -> bodies taken
        self.refused = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                delivery = self.headers.get("X-Status-Delivery", "")
                mode = receiver.mode
                if mode == "fail":
                    receiver.refused += 1
                    self.send_response(500)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.copies[delivery] += 1
                if mode == "hang":
                    time.sleep(15)
                with contextlib.suppress(OSError):
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
