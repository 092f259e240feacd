"""Authentication for the API: API keys as `Bearer` or `Token`, and the staff session.

An `Authorization` header is never ignored. A key sent as `Authorization: Bearer <key>`
or `Authorization: Token <key>` authenticates; any other scheme, a malformed header or
an unknown, revoked or expired key is a 401 that says which schemes we take. (Before, a Bearer
header was silently anonymous on reads: a caller saw public data and thought it was all.)

Keys are the named, scoped, hashed `api.models.ApiKey` (the old clear-text DRF tokens
were moved into it by migration api/0002, so `Token <old token>` keeps working). A key
acts as its owner: a key of an inactive user is a 401, one of a user who is no longer
staff sees public data only (api.permissions), and every write is checked against the
owner's role by the services, all at the time of use. Failed attempts are
counted per client address (edge.ratelimit): past API_AUTH_FAILURE_LIMIT within
API_AUTH_FAILURE_WINDOW seconds they are answered 429 with Retry-After.

The session is looked at only when a session cookie was sent: DRF's SessionAuthentication
reads `request.user`, which loads the session, and Django then adds `Vary: Cookie` even
for a visitor with no cookie, which stops shared caches from sharing.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.request import Request

from api import services
from api.models import ApiKey
from edge import ratelimit

SCHEMES = ("Bearer", "Token")
SCHEME_HINT = "send `Authorization: Bearer <key>` (or `Token <key>`)"


def refuse(request: Request, message: str) -> exceptions.APIException:
    """The answer to a failed attempt: 401, or 429 once this address failed too often."""
    verdict = ratelimit.hit(
        scope="api-auth-failure",
        value=ratelimit.client_address(request),
        limit=settings.API_AUTH_FAILURE_LIMIT,
        window=settings.API_AUTH_FAILURE_WINDOW,
    )
    if not verdict.allowed:
        return exceptions.Throttled(
            wait=verdict.retry_after, detail="Too many failed authentication attempts from this address."
        )
    return exceptions.AuthenticationFailed(message)


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        header = request._request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        try:
            return self._by_header(header)
        except exceptions.AuthenticationFailed as failed:
            raise refuse(request, str(failed.detail)) from None

    def _by_header(self, header: str) -> tuple[Any, Any]:
        scheme, _, credentials = header.strip().partition(" ")
        if scheme.lower() not in {s.lower() for s in SCHEMES}:
            raise exceptions.AuthenticationFailed(
                f"Unsupported authorization scheme {scheme[:20]!r}: {SCHEME_HINT}."
            )
        credentials = credentials.strip()
        if not credentials or " " in credentials:
            raise exceptions.AuthenticationFailed(f"Malformed Authorization header: {SCHEME_HINT}.")
        return self._by_key(credentials)

    def _by_key(self, raw: str) -> tuple[Any, Any]:
        key = ApiKey.objects.select_related("user").filter(key_hash=services.hash_key(raw)).first()
        if key is not None:
            if not key.is_active:
                raise exceptions.AuthenticationFailed("This API key has been revoked.")
            if key.is_expired(timezone.now()):
                assert key.expires_at is not None
                raise exceptions.AuthenticationFailed(
                    f"This API key expired at {key.expires_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}: "
                    "create a new one."
                )
            if not key.user.is_active:
                raise exceptions.AuthenticationFailed("The user of this API key is inactive.")
            services.api_key_touch(key=key)
            return key.user, key
        raise exceptions.AuthenticationFailed("Invalid API key.")

    def key_owner(self, raw: str) -> tuple[Any, Any]:
        """(owner, key) of a raw key outside a request (the stdio MCP server); the same
        refusals as a request, as AuthenticationFailed."""
        return self._by_key(raw)

    def authenticate_header(self, request: Request) -> str:
        # Present on every 401, so a client learns the scheme from the challenge.
        return 'Bearer realm="api"'


class SessionCookieAuthentication(SessionAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        if settings.SESSION_COOKIE_NAME not in request._request.COOKIES:
            return None
        return super().authenticate(request)


# Keys first: their WWW-Authenticate header is what turns "no credentials" into a 401.
API_AUTHENTICATION = [ApiKeyAuthentication, SessionCookieAuthentication]


def key_can_write(auth: Any) -> bool:
    """Whether the credential behind a request may write (a session may: its user's role
    decides, in the services)."""
    return not isinstance(auth, ApiKey) or auth.can_write


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Both spellings of the one API key, so generated clients can use either."""

    target_class = "api.authentication.ApiKeyAuthentication"
    name = ["bearerAuth", "tokenAuth"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, Any]]:
        how = (
            "A staff API key. Create one at `/api/keys/` (signed in as staff); it is shown once. "
            "Read keys see staff data; write keys may also write."
        )
        return [
            {"type": "http", "scheme": "bearer", "description": f"{how} `Authorization: Bearer <key>`."},
            {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": f"{how} The same key as `Authorization: Token <key>`.",
            },
        ]

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[str]]]:
        return [{"bearerAuth": []}, {"tokenAuth": []}]


class SessionCookieScheme(SessionScheme):
    """Document SessionCookieAuthentication as the session cookie scheme it is."""

    target_class = "api.authentication.SessionCookieAuthentication"
