"""The language of a request is the one its path names, and only that.

English pages live at the bare paths and French ones under /fr/ (statuspage.urls,
i18n_patterns with prefix_default_language=False), so a URL always renders in one
language: the page cache keys on it, links and shared URLs mean the same to everyone,
and no answer varies on a header. Django's LocaleMiddleware would also read the cookie
and Accept-Language on every bare path and add `Vary: Accept-Language` to every answer
(the API, the feeds, the badges), which splits shared caches for nothing. The visitor's
preference is used in one place only: the first visit to `/`
(public_site.languages.status_index_entry), which redirects.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation

Handler = Callable[[HttpRequest], HttpResponse]


def language_of_path(path: str) -> str:
    return translation.get_language_from_path(path) or settings.LANGUAGE_CODE


class PathLanguageMiddleware:
    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        language = language_of_path(request.path_info)
        translation.activate(language)
        request.LANGUAGE_CODE = language  # type: ignore[attr-defined]
        try:
            response = self.get_response(request)
        finally:
            # Threads are reused: the next request starts from the default again.
            translation.deactivate()
        response.headers.setdefault("Content-Language", language)
        return response
