"""Request bodies the API accepts: JSON, nested at most MAX_DEPTH levels.

Python's json module recurses once per level, so a body of 100,000 `[` raised
RecursionError, which DRF does not catch (a 500). No resource of ours nests more than a
few levels, so anything deeper is refused as a parse error (400) before it is decoded.

A body over DATA_UPLOAD_MAX_MEMORY_SIZE bytes is a 413 (DRF hands the parser the raw
stream, so Django's own check on `request.body` never runs): refused on its declared
length before reading, and never read past the limit.

`Accept: application/problem+json` alone (a client that names only the error type it
understands) is served JSON rather than refused with a 406.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, NotAcceptable, ParseError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request

MAX_DEPTH = 32
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects, ignoring brackets inside strings."""
    depth = deepest = 0
    for char in _BRACKET.findall(_STRING.sub("", text)):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is larger than this API accepts."
    default_code = "payload_too_large"


class DepthLimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", "utf-8")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = parser_context.get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if limit is not None and declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge()
        raw = stream.read(limit + 1 if limit is not None else -1) if stream is not None else b""
        if limit is not None and len(raw) > limit:
            raise PayloadTooLarge()
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            raise ParseError("The body is not valid UTF-8.") from None
        if json_depth(text) > MAX_DEPTH:
            raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.")
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; letting them in puts floats no schema allows in.
    raise ValueError(f"{name} is not valid JSON")


class ProblemAwareNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, except that a client accepting `application/problem+json` (and
    nothing we render) gets JSON: errors are problem documents, and the rest is JSON."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        try:
            renderers = list(renderers)
            return super().select_renderer(request, renderers, format_suffix)  # type: ignore[no-any-return]
        except NotAcceptable:
            accept = request.META.get("HTTP_ACCEPT", "")
            json_renderers = [r for r in renderers if isinstance(r, JSONRenderer)]
            if "application/problem+json" in accept.lower() and json_renderers:
                return json_renderers[0], json_renderers[0].media_type
            raise
