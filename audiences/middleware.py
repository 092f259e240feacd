"""Pages served by host name: `status.tailspin.example/` answers with that page.

A request whose host is a page's (its `host` field, or `settings.PAGE_HOSTS`) has its
path rewritten before anything else reads it: `/` (and `/fr/`) to the page, `/incidents/<id>/`
to the page's incident, `/api/v2/<part>.json` to the page's JSON; every other path (the
portal, sign-in, static files) is served as on any host. Any other host passes untouched,
so the public page keeps its speed: the host map is held per process and rebuilt only
when this room's write counter moves (docs/adr/0028-audience-pages.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from audiences.selectors import page_for_host

Handler = Callable[[HttpRequest], HttpResponse]

# The addresses a page has on its own host: an optional language prefix, then the page,
# one of its incidents or its JSON.
_ON_PAGE = re.compile(
    r"^(?P<lang>/[a-z]{2}(?:-[a-z]+)?)?/(?P<rest>|incidents/[^/]+/)$|^/(?P<json>api/v2/"
    r"(?:summary|status|components|incidents)\.json)$"
)


def rewritten_path(path: str, slug: str) -> str | None:
    """The page's own address for `path` on its host, or None to leave it alone."""
    match = _ON_PAGE.match(path)
    if match is None:
        return None
    if match["json"]:
        return f"/p/{slug}/{match['json']}"
    lang = match["lang"] or ""
    if lang and lang.lstrip("/") not in _languages():
        return None
    return f"{lang}/p/{slug}/{match['rest']}"


def _languages() -> set[str]:
    from django.conf import settings

    return {code for code, _name in settings.LANGUAGES}


def host_of(request: HttpRequest) -> str:
    """The Host header without its port, lower case (not validated here: Django refuses
    a host outside ALLOWED_HOSTS when anything asks for it)."""
    host = request.META.get("HTTP_HOST", "")
    if host.startswith("["):
        return host.lower()  # an IPv6 literal never names a page
    return host.rsplit(":", 1)[0].lower().rstrip(".")


class PageHostMiddleware:
    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Only the addresses a page has on its host look the host up (no query for the rest).
        slug = page_for_host(host_of(request)) if _ON_PAGE.match(request.path_info) else None
        if slug is not None:
            path = rewritten_path(request.path_info, slug)
            if path is not None:
                request.path_info = path
                request.path = request.META.get("SCRIPT_NAME", "").rstrip("/") + path
        return self.get_response(request)
