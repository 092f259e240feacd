"""RFC 9457 problem details and the request id, for every JSON error the site sends.

One body for every error under /api/ (and the `.json` feeds), whoever answers it (a DRF
view, Django's handlers, a middleware refusing early):

    {"type": "about:blank", "title": "Bad Request", "status": 400,
     "detail": "The request has invalid fields.", "instance": "/api/v1/incidents/",
     "code": "invalid", "errors": {"windows.0.level": ["..."]}, "request_id": "..."}

`code` and `errors` are our extensions (`code` is the stable identifier, `errors` the field
paths); `error` repeats them in the pre-RFC shape for clients written against it, until
it is removed (docs/api.md, "Deprecation").

The request id comes from a sane incoming `X-Request-ID` (a proxy's) or is generated; it
goes back in `X-Request-ID` on every response, in the problem body and, through
RequestIdLogFilter, in every log record written while the request is served.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from http import HTTPStatus
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

PROBLEM_CONTENT_TYPE = "application/problem+json"
REQUEST_ID_HEADER = "X-Request-ID"
# What a proxy's id may look like: printable, no spaces or separators a log could be
# forged with, and short. Anything else is replaced, never echoed.
_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/+=-]{0,127}$")

# The deprecated `error` object in every problem body (docs/api.md, "Versioning and
# deprecation"): deprecated on 2026-12-04 (RFC 9745), gone after 2027-06-30 (RFC 8594).
LEGACY_ERROR_HEADERS = {
    "Deprecation": "@1796342400",
    "Sunset": "Wed, 30 Jun 2027 23:59:59 GMT",
}

_current_request_id: ContextVar[str] = ContextVar("request_id", default="-")


def current_request_id() -> str:
    """The id of the request being served in this context ("-" outside one)."""
    return _current_request_id.get()


def request_id_of(request: Any) -> str:
    """The id of this request (Django's or DRF's), or of the current context."""
    inner = getattr(request, "_request", request)
    return str(getattr(inner, "request_id", None) or current_request_id())


def problem_body(
    *,
    status: int,
    code: str,
    detail: str,
    instance: str,
    request_id: str,
    errors: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    errors = errors or {}
    return {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": instance,
        "code": code,
        "errors": errors,
        "request_id": request_id,
        # Deprecated: the pre-RFC 9457 shape, kept for existing clients (docs/api.md).
        "error": {"code": code, "message": detail, "fields": errors},
    }


def problem_response(
    request: HttpRequest,
    status: int,
    code: str,
    detail: str,
    errors: dict[str, list[str]] | None = None,
) -> JsonResponse:
    body = problem_body(
        status=status,
        code=code,
        detail=detail,
        instance=request.path,
        request_id=request_id_of(request),
        errors=errors,
    )
    return JsonResponse(body, status=status, content_type=PROBLEM_CONTENT_TYPE)


class RequestIdMiddleware:
    """Takes or makes the request id, and sends it back on every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _SANE_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        token = _current_request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            _current_request_id.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        if response.get("Content-Type", "").startswith(PROBLEM_CONTENT_TYPE):
            for name, value in LEGACY_ERROR_HEADERS.items():
                response.headers.setdefault(name, value)
        return response


class RequestIdLogFilter(logging.Filter):
    """Adds `request_id` to every record (settings.LOGGING puts it in the format)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            # django.request logs a 4xx/5xx after the middleware has returned, with the
            # request in `extra`: its id, not the context's.
            request = getattr(record, "request", None)
            record.request_id = getattr(request, "request_id", None) or current_request_id()
        return True
