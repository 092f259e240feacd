"""Compression of what the app serves itself (gzip), without mixing secrets into it.

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

# Below this, the gzip header and the Vary split cost more than they save.
MIN_SIZE = 200
_COMPRESSIBLE = re.compile(
    r"^(text/|application/(json|javascript|xml|[\w.+-]+\+(json|xml))|image/svg\+xml)", re.IGNORECASE
)
ACCEPTS_GZIP = re.compile(r"\bgzip\b")


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


class PublicGZipMiddleware(GZipMiddleware):
    """Django's GZipMiddleware for public, anonymous answers only (see the module doc)."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if not may_compress(request, response):
            return response
        return super().process_response(request, response)  # type: ignore[no-any-return]
