"""What every v1 view shares: authentication, throttles, JSON only, the one error body,
pagination, the public caching contract, and the documented error responses.

Views stay thin: parse input, call one selector or service, render. Anonymous callers
and non-staff tokens see public data only; writes need a staff token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import NotFound
from rest_framework.pagination import BasePagination
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import APIRootView
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from api import serializers as s
from api.authentication import API_AUTHENTICATION
from api.filters import (
    Pagination,
)
from api.throttling import DEFAULT_THROTTLES
from edge.http import finalize_public_response, memoize_public

# --- Documentation helpers -------------------------------------------------------------------


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The error responses of an operation, all with the one error body."""
    descriptions = {
        400: "Invalid input (query string or body).",
        401: "No credentials: send `Authorization: Token <key>`.",
        403: "The token's user is not staff.",
        404: "Not found, or not visible to this caller.",
        429: "Too many requests; see Retry-After.",
        503: "Temporarily unavailable; see Retry-After.",
    }
    return {code: OpenApiResponse(s.ErrorSerializer, description=descriptions[code]) for code in codes}


def acting_user(request: Request) -> User:
    """The staff user behind a write (the permission class has already checked)."""
    user = request.user
    assert isinstance(user, User)
    return user


READ_ERRORS = (429, 503)
WRITE_ERRORS = (400, 401, 403, 429, 503)
DETAIL_WRITE_ERRORS = (400, 401, 403, 404, 429, 503)
STAFF_READ_ERRORS = (401, 403, 429, 503)


class APIMixin(APIView):
    """Policies shared by every v1 view, and the public caching contract on reads."""

    authentication_classes = API_AUTHENTICATION
    throttle_classes = DEFAULT_THROTTLES
    renderer_classes = [JSONRenderer]
    parser_classes = [JSONParser]
    pagination_class: type[BasePagination] | None = Pagination

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        return finalize_public_response(request._request, response)

    def cached(self, build: Callable[[], Response]) -> Response:
        """Memoise an anonymous read per public-state version (see edge.http)."""

        def build_data() -> tuple[int, Any]:
            response = build()
            return response.status_code, response.data

        status_code, data = memoize_public(self.request._request, build_data, prefix="api-v1")
        return Response(data, status=status_code)

    def validated_query(self, serializer_class: type[Serializer]) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.query_params)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


class APIRoot(APIMixin, APIRootView):
    """Links to the v1 resources."""


class APINotFound(APIView):
    """Any other URL under /api/: a 404 in the API's error shape, not the HTML page."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    throttle_classes = DEFAULT_THROTTLES
    renderer_classes = [JSONRenderer]
    schema = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        raise NotFound()
