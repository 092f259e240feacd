"""A small HTTP server on loopback that serves recorded provider documents, honours
If-None-Match, and can be told to fail, stall or grow (tests of the poller)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RECORDED = Path(__file__).parent / "recorded"


@dataclass
class Served:
    documents: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    status: int = 200  # anything else: answer with it and no document
    delay: float = 0.0
    requests: list[dict[str, str]] = field(default_factory=list)
    not_modified: int = 0

    def put(self, path: str, name: str, content_type: str) -> None:
        self.documents[path] = ((RECORDED / name).read_bytes(), content_type)


def _handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            served.requests.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            if served.delay:
                time.sleep(served.delay)
            if served.status != 200 or self.path not in served.documents:
                self.send_response(served.status if served.status != 200 else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body, content_type = served.documents[self.path]
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == etag:
                served.not_modified += 1
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def serving(served: Served) -> Iterator[str]:
    """The server's base URL while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
