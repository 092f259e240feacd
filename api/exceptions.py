"""One error shape for the whole API: RFC 9457 problem details (edge.problems).

Every error answer is `application/problem+json` with `type`, `title`, `status`,
`detail` (one human sentence), `instance` (the path) and our extensions:
- `code`: a stable machine-readable string (`invalid`, `not_authenticated`,
  `permission_denied`, `not_found`, `throttled`, `method_not_allowed`, ...);
- `errors`: per-field messages for validation errors (`{"windows.0.level": [...]}`),
  empty otherwise;
- `request_id`: as in the `X-Request-ID` header and the logs.

Service errors (django `ValidationError`) become 400 with the same shape, so the API
says exactly what the admin would say. A database that is down becomes 503 with
`Retry-After` instead of a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.signals import got_request_exception
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from django.views import csrf, defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler

from api.parsers import PayloadTooLarge
from core.errors import NotApproved
from edge.problems import PROBLEM_CONTENT_TYPE, problem_body, problem_response, request_id_of

logger = logging.getLogger(__name__)

DATABASE_RETRY_AFTER = 30
VALIDATION_MESSAGE = "The request has invalid fields."


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The service is temporarily unavailable; try again shortly."
    default_code = "unavailable"


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested DRF error details to `{"a.0.b": ["message", ...]}`."""
    flat: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            for k, v in _flatten(value, name).items():
                flat.setdefault(k, []).extend(v)
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            flat[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                if item:
                    name = f"{prefix}.{index}" if prefix else str(index)
                    for k, v in _flatten(item, name).items():
                        flat.setdefault(k, []).extend(v)
    else:
        flat[prefix or "non_field_errors"] = [str(detail)]
    return flat


def _code_of(exc: exceptions.APIException) -> str:
    if isinstance(exc, exceptions.ValidationError):
        return "invalid"
    detail = exc.detail
    code = getattr(detail, "code", None)
    if isinstance(code, str) and not isinstance(detail, dict | list):
        return code
    return str(exc.default_code)


class NotApprovedConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The report is not approved yet."
    default_code = "not_approved"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, NotApproved):
        # Publishing before approval is a conflict with the report's state, not bad input.
        exc = NotApprovedConflict(" ".join(exc.messages))
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=as_serializer_error(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, OperationalError | InterfaceError) or (
        isinstance(exc, DatabaseError) and "timeout" in str(exc).lower()
    ):
        # Degrade, don't collapse: the caller learns when to come back.
        logger.warning("database unavailable while serving the API", exc_info=True)
        exc = ServiceUnavailable()
        exc.wait = DATABASE_RETRY_AFTER  # type: ignore[attr-defined]

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    assert isinstance(exc, exceptions.APIException)

    fields: dict[str, list[str]] = {}
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        non_field = fields.get("non_field_errors")
        message = non_field[0] if non_field and len(fields) == 1 else VALIDATION_MESSAGE
    else:
        message = str(exc.detail)
    request = context.get("request")
    response.data = problem_body(
        status=response.status_code,
        code=_code_of(exc),
        detail=message,
        instance=request.path if request is not None else "",
        request_id=request_id_of(request),
        errors=fields,
    )
    response.content_type = PROBLEM_CONTENT_TYPE
    if response.status_code in (status.HTTP_429_TOO_MANY_REQUESTS, status.HTTP_503_SERVICE_UNAVAILABLE):
        # Retry-After is always present on these, even when the wait is unknown.
        wait = getattr(exc, "wait", None)
        response.headers["Retry-After"] = str(max(1, int(wait or 1)))
    return response


# --- Errors Django answers before DRF sees the request ------------------------------------
# An unknown /api/ URL, a CSRF failure or a crash outside a DRF view used to come back as
# an HTML page. Under /api/ they answer in the same JSON shape; elsewhere Django's pages.
# With DEBUG on, Django answers crashes with its debug page before these handlers:
# ApiProblemMiddleware catches them first under /api/.


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def _json_error(request: HttpRequest, status_code: int, code: str, message: str) -> HttpResponse:
    return problem_response(request, status_code, code, message)


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        if isinstance(exception, RequestDataTooBig):
            return _json_error(request, 413, "payload_too_large", str(PayloadTooLarge.default_detail))
        return _json_error(request, 400, "bad_request", "The request is malformed.")
    return defaults.bad_request(request, exception)


def handler403(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _json_error(
            request, 403, "permission_denied", "You do not have permission to perform this action."
        )
    return defaults.permission_denied(request, exception)


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return _json_error(request, 404, "not_found", "Not found.")
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return _json_error(
            request, 500, "server_error", "Something went wrong on our side; it has been logged."
        )
    return defaults.server_error(request)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if _is_api(request):
        return _json_error(request, 403, "csrf_failed", f"CSRF check failed: {reason}")
    return csrf.csrf_failure(request, reason=reason)


class ApiProblemMiddleware:
    """Under /api/, a crash or a refused request answers a problem document even with
    DEBUG on (Django would render its HTML debug page); elsewhere nothing changes."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response: HttpResponse = self.get_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not _is_api(request):
            return None
        if isinstance(exception, Http404):
            return handler404(request, exception)
        if isinstance(exception, SuspiciousOperation):
            logger.warning("refused: %s", exception)
            return handler400(request, exception)
        if isinstance(exception, DjangoPermissionDenied):
            return handler403(request, exception)
        # What Django does for an uncaught exception, without its debug page.
        got_request_exception.send(sender=None, request=request)
        logger.error("Internal Server Error: %s", request.path, exc_info=exception)
        return handler500(request)
