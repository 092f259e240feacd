"""What every v1 view shares: authentication, throttles (with `RateLimit` headers),
JSON only, the one error body (problem details), cursor pagination, the public caching contract, strict query
strings, `Idempotency-Key` on POST, `If-Match` on PATCH/PUT/DELETE, and the documented
error responses.

Views stay thin: parse input, call one selector or service, render. Anonymous callers
and non-staff tokens see public data only; writes need a staff token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpResponsePermanentRedirect
from django.urls import Resolver404, resolve, reverse
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.pagination import BasePagination
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import APIRootView
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from api import idempotency
from api import serializers as s
from api.authentication import API_AUTHENTICATION, SCHEME_HINT
from api.pagination import PAGINATION_PARAMS, CursorPagination, link_header
from api.parsers import DepthLimitedJSONParser
from api.throttling import DEFAULT_THROTTLES, rate_limit_headers
from edge.http import finalize_public_response, memoize_public, strong_etag

# --- Documentation helpers -------------------------------------------------------------------


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The error responses of an operation, all with the one error body (RFC 9457 problem
    details; api.schema_headers makes them `application/problem+json`)."""
    descriptions = {
        400: "Invalid input: a bad or unknown query parameter or body field (named in `errors`).",
        401: f"No valid credentials: {SCHEME_HINT}. The `WWW-Authenticate` header names the scheme.",
        403: "The key's user is not staff, or a read-scoped key tried to write.",
        404: "Not found, or not visible to this caller.",
        409: "A request with the same `Idempotency-Key` is still being processed.",
        412: "`If-Match` does not match the resource's current `ETag`: fetch it again.",
        422: "This `Idempotency-Key` was already used for a different request.",
        413: "The request body is over the size limit.",
        429: "Too many requests; see `Retry-After` and the `RateLimit` headers.",
        503: "Temporarily unavailable; see Retry-After.",
    }
    return {code: OpenApiResponse(s.ErrorSerializer, description=descriptions[code]) for code in codes}


def acting_user(request: Request) -> User:
    """The staff user behind a write (the permission class has already checked)."""
    user = request.user
    assert isinstance(user, User)
    return user


# Reads are public, but a bad key is a 401, not anonymity.
READ_ERRORS = (401, 429, 503)
WRITE_ERRORS = (400, 401, 403, 409, 413, 422, 429, 503)
DETAIL_WRITE_ERRORS = (400, 401, 403, 404, 409, 413, 422, 429, 503)
EDIT_ERRORS = (400, 401, 403, 404, 412, 413, 429, 503)
STAFF_READ_ERRORS = (401, 403, 429, 503)
# The staff-only SLA and alert resources (customers, SLA policies, credits, alert
# integrations) document these; writes also take an Idempotency-Key: 409 while its first
# request runs, 422 when reused.
STAFF_ERRORS = (400, 401, 403, 404, 429)
STAFF_WRITE_ERRORS = (400, 401, 403, 404, 409, 422, 429)
STAFF_EDIT_ERRORS = (400, 401, 403, 404, 412, 429)


class APIMixin(APIView):
    """Policies shared by every v1 view, and the public caching contract on reads."""

    authentication_classes = API_AUTHENTICATION
    throttle_classes = DEFAULT_THROTTLES
    renderer_classes = [JSONRenderer]
    parser_classes = [DepthLimitedJSONParser]
    pagination_class: type[BasePagination] | None = CursorPagination

    # Query parameters each action takes besides pagination: {action: filter serializer}.
    # Anything else in the query string is a 400 naming it, never silently ignored.
    query_serializers: dict[str, type[Serializer]] = {}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.refuse_unknown_query_params(request)
        method = (request.method or "").lower()
        if method in ("patch", "put", "delete") and request._request.META.get("HTTP_IF_MATCH"):
            self.check_if_match(request._request.META["HTTP_IF_MATCH"])
        if method == "post" and idempotency.HEADER in request._request.META:
            # Wrap this request's handler (DRF looks it up after initial()).
            handler = getattr(self, method)
            setattr(self, method, lambda req, *a, **kw: idempotency.run(req, handler, *a, **kw))

    def refuse_unknown_query_params(self, request: Request) -> None:
        action = getattr(self, "action", None) or ""
        allowed: set[str] = set()
        if action == "list":
            allowed |= PAGINATION_PARAMS
        filters = self.query_serializers.get(action)
        if filters is not None:
            allowed |= set(filters().fields)
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise exceptions.ValidationError({name: ["Unknown query parameter."] for name in unknown})

    # --- Conditional writes ------------------------------------------------------------------

    def current_representation(self) -> Any:
        """What a GET of the target of this write returns now (for `If-Match`)."""
        return self.get_serializer(self.get_object()).data  # type: ignore[attr-defined]

    def check_if_match(self, header: str) -> None:
        if header.strip() == "*":
            return
        current = strong_etag(JSONRenderer().render(self.current_representation()))
        # If-Match uses the strong comparison (RFC 9110 13.1.1): a weak tag never matches.
        if current not in [tag.strip() for tag in header.split(",")]:
            raise PreconditionFailed()

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in rate_limit_headers(request).items():
            response[name] = value
        link = link_header(getattr(response, "data", None))
        if link:
            response["Link"] = link
        if request.method in ("PATCH", "PUT") and response.status_code == 200 and hasattr(response, "render"):
            # The new version's validator, for the next conditional write.
            response.render()
            response["ETag"] = strong_etag(response.content)
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


class PreconditionFailed(exceptions.APIException):
    status_code = 412
    default_detail = "The resource has changed since the ETag you sent (If-Match); fetch it again."
    default_code = "precondition_failed"


class CrudViewSet(APIMixin, viewsets.ModelViewSet):
    """A v1 resource that lists, reads, creates, changes and deletes. Changes are PATCH
    only (send what changes): no PUT. A resource that refuses one of these leaves its
    method out of `http_method_names` (the router then answers it 405)."""

    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def fresh(self, instance: Any) -> Any:
        """The row as a GET of it answers now: read again through the list's queryset, so that
        what the write changed and the related rows it prefetches are current."""
        return self.get_serializer(self.get_queryset().get(pk=instance.pk)).data

    def created(self, instance: Any, data: Any) -> Response:
        """201 Created with the new row as `data` shows it and its address in `Location`."""
        address = reverse(f"{self.basename}-detail", args=[getattr(instance, self.lookup_field)])
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": address})


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

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # `/api/v1/incidents` means `/api/v1/incidents/`: a 308 keeps the method and body.
        path = request.path_info
        if not path.endswith("/"):
            try:
                match = resolve(path + "/")
            except Resolver404:
                match = None
            if match is not None and match.url_name != "api-not-found":
                query = request.META.get("QUERY_STRING", "")
                target = request.path + "/" + (f"?{query}" if query else "")
                redirect = HttpResponsePermanentRedirect(target)
                redirect.status_code = 308
                return redirect
        return super().dispatch(request, *args, **kwargs)
