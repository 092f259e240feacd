"""How a visitor gets the page in their language.

- Every public page has one address per language: English at the bare path, French
  under /fr/ (statuspage.urls). The path decides (edge.i18n), so the page cache keys on
  the language and a cached page is never served in the other one.
- The first visit to `/` follows the visitor's choice: the language cookie set by the
  switch, else the first supported language of Accept-Language; a French reader is
  redirected to /fr/. Only that answer depends on the headers (it says so with Vary) and
  it is cheap: no database, no page render. Deep links are never redirected: a shared
  URL shows the language it names.
- The switch in the footer is a plain link to /language/<code>/?next=<this page>: it
  sets the cookie and redirects to the same page in that language. No JavaScript.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import is_valid_path, reverse
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation.trans_real import parse_accept_lang_header

from edge.i18n import language_of_path
from edge.middleware import shed_exempt

COOKIE_MAX_AGE = 365 * 24 * 3600
# Redirects that depend on the visitor's headers must not be stored by shared caches.
PRIVATE = "private, no-cache"


def supported() -> set[str]:
    return {code for code, _name in settings.LANGUAGES}


def strip_language(path: str) -> str:
    """'/fr/history/' -> '/history/'; a bare path is returned as it is."""
    language = translation.get_language_from_path(path)
    if language is None or language == settings.LANGUAGE_CODE:
        return path
    rest = path[len(language) + 1 :]
    return rest if rest.startswith("/") else "/" + rest


def path_in(path: str, language: str) -> str:
    """The same page in `language`: '/history/' -> '/fr/history/' and back."""
    bare = strip_language(path)
    if language == settings.LANGUAGE_CODE:
        return bare
    return f"/{language}{bare}"


def url_in(url: str, language: str) -> str:
    """`path_in` for a local URL with its query; the language's home when the path is
    not a page in that language (the API, the console: English only)."""
    parts = urlsplit(url)
    target = path_in(parts.path or "/", language)
    with translation.override(language):
        if not is_valid_path(target):
            return reverse("public:index")
    return urlunsplit(("", "", target, parts.query, ""))


@dataclass(frozen=True)
class LanguageLink:
    code: str
    name: str  # in its own language: "Français" reads as French to a French reader
    href: str  # the switch, which also remembers the choice
    alternate: str  # the page itself in that language, absolute on SITE_URL (rel=alternate hreflang)
    current: bool


def language_links(request: HttpRequest) -> list[LanguageLink]:
    """One link per language for the page being rendered. Built from the path and the
    query the view renders (the page cache normalises request.GET), so a cached page
    carries no visitor's stray parameters."""
    current = translation.get_language()
    query = request.GET.urlencode()
    here = request.path + (f"?{query}" if query else "")
    links = []
    for code, _name in settings.LANGUAGES:
        # Absolute, as search engines require of hreflang, and on SITE_URL, never the
        # request's Host: the page is cached and served to every reader.
        alternate = settings.SITE_URL + path_in(request.path, code) + (f"?{query}" if query else "")
        links.append(
            LanguageLink(
                code=code,
                name=translation.get_language_info(code)["name_local"],
                href=reverse("switch-language", args=[code]) + "?" + urlencode({"next": here}),
                alternate=alternate,
                current=code == current,
            )
        )
    return links


def switch_language(request: HttpRequest, code: str) -> HttpResponse:
    """Remember the choice and show the same page in that language."""
    if code not in supported():
        raise Http404("No such language.")
    next_url = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts=None) or not next_url.startswith("/"):
        next_url = "/"
    response = HttpResponseRedirect(url_in(next_url, code))
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME, code, max_age=COOKIE_MAX_AGE, samesite="Lax", httponly=True
    )
    response["Cache-Control"] = "no-store"
    return response


def cookie_language(request: HttpRequest) -> str | None:
    """The language the visitor chose with the switch, if any."""
    cookie = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
    return str(cookie) if cookie in supported() else None


def header_language(request: HttpRequest) -> str:
    """The first supported language of Accept-Language, in the visitor's order."""
    header = request.headers.get("Accept-Language", "")
    for accepted, _q in parse_accept_lang_header(header):
        if accepted == "*":
            break
        try:
            return translation.get_supported_language_variant(accepted)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


def is_navigation(request: HttpRequest) -> bool:
    # The live script re-reads the page it shows (Sec-Fetch-Mode: cors or same-origin):
    # it must get that page, not be sent to the other language. Browsers without
    # Fetch Metadata send nothing and are treated as a navigation.
    return request.headers.get("Sec-Fetch-Mode", "navigate") == "navigate"


View = Callable[..., HttpResponse]

# What the English `/` answers on besides its path: the switch's cookie, the browser's
# languages, and whether the request is a navigation. Every answer of it names all three,
# the page as well as the redirect, so a shared cache (nginx's micro-cache honours Vary)
# keeps a copy per combination: it never hands the English page to a reader whose cookie
# asks for French, nor the live script's re-read (never redirected) to a navigation.
ENTRY_VARY = ("Accept-Language", "Cookie", "Sec-Fetch-Mode")


def with_language_entry(view: View) -> View:
    """Wrap the English `/`: send a visitor who prefers another language there."""

    def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        default = settings.LANGUAGE_CODE
        if not is_navigation(request):
            return view(request, *args, **kwargs)
        chosen = cookie_language(request)
        from_header = header_language(request)
        language = chosen or from_header
        if language != default:
            query = request.META.get("QUERY_STRING", "")
            with translation.override(language):
                target = reverse("public:index")
            redirect = HttpResponseRedirect(target + (f"?{query}" if query else ""))
            redirect["Cache-Control"] = PRIVATE
            return redirect
        response = view(request, *args, **kwargs)
        if from_header != default:
            # English by the visitor's own choice against what the browser asks for:
            # kept out of shared caches altogether.
            response["Cache-Control"] = PRIVATE
        return response

    @wraps(view)
    def entry_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if (
            request.method not in ("GET", "HEAD")
            or language_of_path(request.path_info) != settings.LANGUAGE_CODE
        ):
            return view(request, *args, **kwargs)
        response = answer(request, *args, **kwargs)
        patch_vary_headers(response, ENTRY_VARY)
        return response

    return shed_exempt(entry_view)
