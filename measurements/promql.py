"""Checks on an SLI source's text before it is saved: a label selector made of
well-formed matchers, and a query whose brackets and strings balance once `{selector}`
and `{window}` are filled in. Prometheus itself is not asked: a source can be saved
while Prometheus is down, and "test the query" asks it."""

from __future__ import annotations

import re

_MATCHER = re.compile(r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*')
_PAIRS = {")": "(", "]": "[", "}": "{"}
MAX_QUERY = 500


def selector_problem(selector: str) -> str:
    """Why `selector` is not a comma-separated list of label matchers, or ""."""
    text = selector.strip()
    if not text:
        return ""
    position = 0
    while True:
        match = _MATCHER.match(text, position)
        if match is None:
            return (
                'Write label matchers separated by commas, e.g. location="us-central1" '
                f"(stopped at “{text[position : position + 20]}”)."
            )
        position = match.end()
        if position == len(text):
            return ""
        if text[position] != ",":
            return f"Expected a comma after “{text[:position].strip()}”."
        position += 1
        if position == len(text):
            return "A label selector does not end with a comma."


def render(query: str, selector: str, minutes: int) -> str:
    """The query as Prometheus receives it (measurements.selectors renders the same way)."""
    selector = selector.strip()
    return query.replace("{selector}", "{" + selector + "}" if selector else "").replace(
        "{window}", f"{minutes}m"
    )


def query_problem(query: str, selector: str = "", minutes: int = 5) -> str:
    """Why `query` cannot be a PromQL expression, or ""."""
    if not query.strip():
        return "Enter a PromQL expression."
    if len(query) > MAX_QUERY:
        return f"At most {MAX_QUERY} characters."
    if "\n" in query or "\r" in query:
        return "Write the expression on one line."
    text = render(query, selector, minutes)
    stack: list[str] = []
    quote = ""
    escaped = False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "\"'`":
            quote = char
        elif char in "([{":
            stack.append(char)
        elif char in _PAIRS and (not stack or stack.pop() != _PAIRS[char]):
            return f"An unmatched “{char}”."
    if quote:
        return "A string is not closed."
    if stack:
        return f"An unclosed “{stack[-1]}”."
    if not re.search(r"[A-Za-z_:]", text):
        return "The expression names no metric or function."
    return ""
