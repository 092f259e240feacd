"""Light on the wire: compression of what the app serves itself (gzip), without mixing
secrets into it, and 304s without the fields a revalidation does not need.

Public pages from the page cache are compressed once, when they are stored
(`gzipped`, used by edge.page_cache), and served as stored to every client that accepts
gzip. Everything else goes through Django's GZipMiddleware (its random-length gzip header
blurs lengths, the BREACH mitigation), except answers that may carry a secret next to
text an attacker controls: requests with credentials, pages that render a CSRF token and
answers that set cookies. Design: docs/adr/0016-light-on-the-wire.md.
"""

from __future__ import annotations

import gzip
import re

from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware

from edge.http import is_anonymous_request
from edge.stale import SNAPSHOT_HEADER

# Below this, the gzip header and the Vary split cost more than they save.
MIN_SIZE = 200
_COMPRESSIBLE = re.compile(
    r"^(text/|application/(json|javascript|xml|[\w.+-]+\+(json|xml))|image/svg\+xml)", re.IGNORECASE
)
ACCEPTS_GZIP = re.compile(r"\bgzip\b")
NOT_MODIFIED_FIELDS = frozenset(
    {"cache-control", "content-location", "date", "etag", "expires", "vary", "last-modified", "age"}
    | {SNAPSHOT_HEADER.lower(), "retry-after"}
)


def compressible(content_type: str) -> bool:
    return bool(_COMPRESSIBLE.match(content_type or ""))


def accepts_gzip(request: HttpRequest) -> bool:
    return bool(ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))


def gzipped(body: bytes, content_type: str) -> bytes | None:
    """The body compressed for storage beside it, or None when that is not worth it. No
    random padding: only anonymous public pages are stored, and they hold no secret."""
    if len(body) < MIN_SIZE or not compressible(content_type):
        return None
    packed = gzip.compress(body, compresslevel=6, mtime=0)
    return packed if len(packed) < len(body) else None


def may_compress(request: HttpRequest, response: HttpResponseBase) -> bool:
    """False for answers that could hold a secret beside attacker-controlled text."""
    if not is_anonymous_request(request):
        return False  # a session or an API token: the page is someone's
    if request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
        return False  # get_token() ran: a CSRF token is in the page
    if response.cookies:
        return False
    return compressible(response.get("Content-Type", ""))


def lean_not_modified(response: HttpResponseBase) -> HttpResponseBase:
    """A 304 keeps only the fields RFC 9110 (15.4.5) asks for and those that update a
    stored copy: the browser keeps the 200's other headers (the security ones with them).
    An open page revalidates its version document every few seconds, so this is most of
    what an idle tab downloads."""
    for name in [name for name in response.headers if name.lower() not in NOT_MODIFIED_FIELDS]:
        del response.headers[name]
    return response


class WireMiddleware(GZipMiddleware):
    """Outermost: Django's GZipMiddleware for public, anonymous answers only (see the
    module doc), and lean 304s."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if response.status_code == 304:
            return lean_not_modified(response)
        if not may_compress(request, response):
            return response
        return super().process_response(request, response)  # type: ignore[no-any-return]
