"""An SMTP sink for the compose test: accepts every message on port 1025 and appends one
JSON line per message (recipients, Message-ID, subject) to /mail/log.jsonl. Each message
takes SINK_DELAY seconds, so that a delivery batch is long enough to kill a worker in it.

A small asyncio server on the standard library alone (smtpd is gone from Python 3.12)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import os
from pathlib import Path

LOG = Path(os.environ.get("SINK_LOG", "/mail/log.jsonl"))
DELAY = float(os.environ.get("SINK_DELAY", "0.1"))


def record(recipients: list[str], data: bytes) -> None:
    message = email.message_from_bytes(data, policy=email.policy.default)
    line = {"to": recipients, "message_id": str(message["Message-ID"]), "subject": str(message["Subject"])}
    with LOG.open("a") as log:
        log.write(json.dumps(line) + "\n")


async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    def say(text: str) -> None:
        writer.write((text + "\r\n").encode())

    say("220 sink ESMTP")
    recipients: list[str] = []
    while line := await reader.readline():
        verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
        if verb in ("EHLO", "HELO"):
            say("250-sink\r\n250 8BITMIME" if verb == "EHLO" else "250 sink")
        elif verb == "MAIL":
            recipients = []
            say("250 OK")
        elif verb == "RCPT":
            recipients.append(line.decode().split(":", 1)[1].strip().strip("<>"))
            say("250 OK")
        elif verb == "DATA":
            say("354 end with .")
            await writer.drain()
            lines = []
            while (chunk := await reader.readline()) not in (b".\r\n", b".\n", b""):
                lines.append(chunk[1:] if chunk.startswith(b"..") else chunk)
            await asyncio.sleep(DELAY)
            record(recipients, b"".join(lines))
            say("250 OK queued")
        elif verb == "QUIT":
            say("221 bye")
            await writer.drain()
            break
        else:  # RSET, NOOP
            say("250 OK")
        await writer.drain()
    writer.close()


async def main() -> None:
    LOG.parent.mkdir(parents=True, exist_ok=True)
    LOG.touch()
    server = await asyncio.start_server(session, "0.0.0.0", 1025)  # noqa: S104 - inside its container
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
