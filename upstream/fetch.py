"""One polite HTTP GET of a provider's document: conditional (ETag, If-Modified-Since),
with a timeout and a size limit. No retries here: the poller backs off and comes back."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from django.conf import settings


class FetchError(Exception):
    """The read failed; the message is short and safe to show staff."""


@dataclass(frozen=True)
class Fetched:
    not_modified: bool
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


class _NoRedirectToOtherSchemes(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if not newurl.lower().startswith(("http://", "https://")):
            raise FetchError("redirected to a non-HTTP address")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_opener = urllib.request.build_opener(_NoRedirectToOtherSchemes)


def _read_bounded(response: object, limit: int, *, deadline: float) -> bytes:
    """At most `limit` bytes, before `deadline` (the socket timeout bounds each wait, not a
    server that drips a byte at a time)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise FetchError("the document took too long to arrive")
        chunk = response.read(65536)  # type: ignore[attr-defined]
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise FetchError(f"the document is larger than {limit} bytes")
        chunks.append(chunk)


def fetch(url: str, *, etag: str = "", last_modified: str = "") -> Fetched:
    if not url.lower().startswith(("http://", "https://")):
        raise FetchError("only http and https addresses are read")
    headers = {
        "User-Agent": settings.UPSTREAM_USER_AGENT,
        "Accept": "application/json, application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.5",
    }
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    # The scheme is checked above (and on every redirect): http and https only.
    request = urllib.request.Request(url, headers=headers)  # noqa: S310
    try:
        with _opener.open(request, timeout=settings.UPSTREAM_TIMEOUT_SECONDS) as response:
            length = response.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > settings.UPSTREAM_MAX_BYTES:
                raise FetchError(f"the document is larger than {settings.UPSTREAM_MAX_BYTES} bytes")
            deadline = time.monotonic() + 3 * settings.UPSTREAM_TIMEOUT_SECONDS
            body = _read_bounded(response, settings.UPSTREAM_MAX_BYTES, deadline=deadline)
            return Fetched(
                not_modified=False,
                body=body,
                etag=(response.headers.get("ETag") or "")[:200],
                last_modified=(response.headers.get("Last-Modified") or "")[:100],
            )
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return Fetched(not_modified=True, etag=etag, last_modified=last_modified)
        raise FetchError(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"unreachable: {str(reason)[:200]}") from None
