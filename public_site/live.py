"""The live page's question, "has anything changed?", as a tiny version document.

An open status or incident page polls this every LIVE_REFRESH_SECONDS with If-None-Match
(static/js/live.js); nearly every answer is a 304 of a few bytes built from one cache read,
without the database. Only when the document changes does the page fetch itself again
(from the versioned page cache) and swap the sections that differ.
"""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from edge.http import is_not_modified, strong_etag
from edge.middleware import shed_exempt
from edge.version import public_state_version


def live_document() -> bytes:
    # The public-state stamp changes on every public write. The time bucket (one per page
    # cache TTL) makes an open page also pick up what only the clock changes: the running
    # duration of an ongoing incident, the day rolling over in the grid.
    bucket = int(time.time() // max(1, settings.PUBLIC_CACHE_TTL))
    document = {
        "version": f"{public_state_version()}.{bucket}",
        "interval": settings.LIVE_REFRESH_SECONDS,
    }
    return json.dumps(document, separators=(",", ":")).encode()


@shed_exempt
def live_version(request: HttpRequest) -> HttpResponse:
    body = live_document()
    etag = strong_etag(body)
    response = HttpResponse(status=304) if is_not_modified(request, etag, None) else None
    if response is None:
        response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    # Short enough for a CDN in front to pass changes on within the poll interval; the
    # script itself always revalidates (fetch cache mode "no-cache").
    max_age = max(1, settings.LIVE_REFRESH_SECONDS // 2)
    response["Cache-Control"] = f"public, max-age={max_age}, stale-if-error=600"
    return response
