"""Authentication for the API that keeps anonymous public reads cookie-free.

DRF's SessionAuthentication reads `request.user`, which loads the session; Django then
adds `Vary: Cookie` to the response even for a visitor with no cookie at all, and shared
caches stop sharing. This subclass looks at the session only when a session cookie was
sent.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.authentication import SessionScheme
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.request import Request


class SessionCookieAuthentication(SessionAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        if settings.SESSION_COOKIE_NAME not in request._request.COOKIES:
            return None
        return super().authenticate(request)


# Token first: its WWW-Authenticate header is what turns "no credentials" into a 401.
API_AUTHENTICATION = [TokenAuthentication, SessionCookieAuthentication]


class SessionCookieScheme(SessionScheme):
    """Document SessionCookieAuthentication as the session cookie scheme it is."""

    target_class = "api.authentication.SessionCookieAuthentication"
