"""The live page: "has anything changed?" (a tiny version document) and "what?" (the
changed sections of one page).

An open status, product or incident page polls the version document every
LIVE_REFRESH_SECONDS while it is visible (static/js/live.js); nearly every answer is a
304 of a few bytes built from one cache read, and a CDN may keep it LIVE_DOCUMENT_MAX_AGE
seconds, so a million open tabs cost the origin one answer per that many seconds. When
the version moves, the page asks `live_sections` for its sections, naming the digests it
holds, and gets back only the sections whose digest differs (none when nothing it shows
changed), cut from the page as the versioned page cache holds it.
Design: docs/adr/0016-light-on-the-wire.md.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.urls import Resolver404, ResolverMatch, resolve
from django.utils import translation

from edge.http import is_not_modified, strong_etag
from edge.i18n import language_of_path
from edge.middleware import shed_exempt
from edge.stale import SNAPSHOT_HEADER
from edge.version import public_state_version
from public_site import live_markup, views

View = Callable[..., HttpResponse]

# The pages that carry live sections, by URL name, and the cached view that renders each
# for everyone (never a signed-in variant: the answer is shared).
LIVE_VIEWS: dict[str, View] = {
    "public:index": views.status_index,
    "public:product": views.product_detail,
    "public:incident": views.incident_anonymous,
}
MAX_PATH = 300
MAX_HAVE = 64  # digests an open page may name (a page has a handful of sections)
MEMO_ENTRIES = 64


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


def _shared_briefly(response: HttpResponse) -> HttpResponse:
    # Short enough for a CDN in front to pass changes on well within the poll interval;
    # the script itself always revalidates (fetch cache mode "no-cache").
    response["Cache-Control"] = (
        f"public, max-age={max(0, settings.LIVE_DOCUMENT_MAX_AGE)}, stale-if-error=600"
    )
    return response


@shed_exempt
def live_version(request: HttpRequest) -> HttpResponse:
    body = live_document()
    etag = strong_etag(body)
    response = HttpResponse(status=304) if is_not_modified(request, etag, None) else None
    if response is None:
        response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    return _shared_briefly(response)


# Sections cut from a page, by the page's ETag: the cut is made once per page version
# and process, not once per open tab.
_memo: OrderedDict[str, tuple[dict[str, tuple[str, str]], str]] = OrderedDict()
_memo_lock = threading.Lock()


def _cut(etag: str, body: bytes) -> tuple[dict[str, tuple[str, str]], str]:
    with _memo_lock:
        hit = _memo.get(etag)
    if hit is not None:
        return hit
    page = body.decode()
    cut = (live_markup.sections_of(page), live_markup.title_of(page))
    with _memo_lock:
        _memo[etag] = cut
        while len(_memo) > MEMO_ENTRIES:
            _memo.popitem(last=False)
    return cut


def _page_request(request: HttpRequest, path: str, query: str, match: ResolverMatch) -> HttpRequest:
    """The anonymous, unconditional, uncompressed GET of `path` the page cache answers: a
    render it causes is cached for everyone, so it must be the page's own (its URL name
    marks the current navigation link)."""
    page = copy.copy(request)
    page.resolver_match = match
    page.path = page.path_info = path
    page.GET = QueryDict(query)
    page.COOKIES = {}
    page.META = {
        key: value
        for key, value in request.META.items()
        if key not in ("HTTP_COOKIE", "HTTP_AUTHORIZATION", "HTTP_IF_NONE_MATCH", "HTTP_IF_MODIFIED_SINCE")
        and key != "HTTP_ACCEPT_ENCODING"
    }
    page.META.update(PATH_INFO=path, QUERY_STRING=query)
    return page


def _render_page(request: HttpRequest, target: str) -> HttpResponse:
    parts = urlsplit(target)
    if not target.startswith("/") or target.startswith("//") or len(target) > MAX_PATH or parts.netloc:
        raise Http404("Not a page of this site.")
    with translation.override(language_of_path(parts.path)):
        try:
            match = resolve(parts.path)
        except Resolver404 as exc:
            raise Http404("Not a page of this site.") from exc
        view = LIVE_VIEWS.get(match.view_name)
        if view is None:
            raise Http404("This page has no live sections.")
        return view(_page_request(request, parts.path, parts.query, match), *match.args, **match.kwargs)


@shed_exempt
def live_sections(request: HttpRequest) -> HttpResponse:
    """The live sections of the page at ?path= whose digest is not among ?have= (dot-
    separated); ?v= (the version the page saw) only keys shared caches."""
    page = _render_page(request, request.GET.get("path", ""))
    if page.status_code != 200:
        return _shared_briefly(JsonResponse({"status": page.status_code}, status=page.status_code))
    have = set(request.GET.get("have", "").split(".")[:MAX_HAVE])
    sections, title = _cut(page.get("ETag", "") or strong_etag(page.content), page.content)
    changed = {name: markup for name, (digest, markup) in sections.items() if digest not in have}
    stale = page.get(SNAPSHOT_HEADER) == "stale"
    body = {"sections": changed, "title": title if changed else "", "stale": stale}
    response = JsonResponse(body)
    if stale:
        response["Cache-Control"] = "no-store"  # an older copy: ask again next time
        return response
    return _shared_briefly(response)
