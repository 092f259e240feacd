"""Request bodies the API accepts: JSON, nested at most MAX_DEPTH levels.

Python's json module recurses once per level, so a body of 100,000 `[` raised
RecursionError, which DRF does not catch (a 500). No resource of ours nests more than a
few levels, so anything deeper is refused as a parse error (400) before it is decoded.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

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


class DepthLimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", "utf-8")
        try:
            text = stream.read().decode(encoding) if stream is not None else ""
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
