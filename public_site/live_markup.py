"""The live sections of a rendered page: the elements marked data-live="name", found by
that attribute alone (whatever markup they hold), each stamped with a digest of its
content (data-live-digest) so that an open page can say which versions it holds and get
back only the sections that differ (public_site/live.py, static/js/live.js).
Design: docs/adr/0016-light-on-the-wire.md.

The scan reads tags with a regular expression rather than a full HTML parser: the
templates close what they open and Django escapes `>` inside attribute values, so tags
are unambiguous, and a page of megabytes is scanned in milliseconds.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.http import HttpRequest, HttpResponse

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
# A start tag carrying data-live="name" (a comment is matched whole, to be skipped).
_LIVE_START = re.compile(r'<!--.*?-->|<([a-zA-Z][\w:-]*)([^>]*?\sdata-live="([\w-]+)"[^>]*)>', re.DOTALL)
_DIGEST = re.compile(r'\sdata-live-digest="[0-9a-f]*"')
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
DIGEST_LENGTH = 12


@dataclass(frozen=True)
class Section:
    name: str
    start: int  # where its start tag begins
    end: int  # just after its end tag
    name_end: int  # just after data-live="name" in the start tag

    def markup(self, page: str) -> str:
        return page[self.start : self.end]


def _closing(tag: str) -> re.Pattern[str]:
    return re.compile(r"<!--.*?-->|<(/?)" + re.escape(tag) + r"(?=[\s/>])([^>]*)>", re.DOTALL | re.IGNORECASE)


def find_sections(page: str) -> list[Section]:
    """The outermost data-live elements of a page, in document order. Only start tags
    that carry the attribute are looked at, then, for each, the tags of its own name up
    to the one that closes it: the bars and cells between are skipped by the regular
    expression engine instead of being walked one by one (a page of 9,000 bars)."""
    found: list[Section] = []
    at = 0
    while match := _LIVE_START.search(page, at):
        at = match.end()
        tag = match.group(1)
        if tag is None or tag.lower() in VOID or match.group(2).rstrip().endswith("/"):
            continue  # a comment, or an element that holds nothing
        depth = 1
        for inner in _closing(tag).finditer(page, at):
            if inner.group(0).startswith("<!--") or (
                not inner.group(1) and inner.group(2).rstrip().endswith("/")
            ):
                continue
            depth += -1 if inner.group(1) else 1
            if not depth:
                found.append(Section(match.group(3), match.start(), inner.end(), match.end(3) + 1))
                at = inner.end()
                break
        else:
            break  # never closed: nothing after it is a section of its own
    return found


def digest(markup: str) -> str:
    return hashlib.sha256(_DIGEST.sub("", markup).encode()).hexdigest()[:DIGEST_LENGTH]


def mark_sections(page: str) -> str:
    """The page with each live section stamped data-live-digest="…" (after its name)."""
    out = page
    for section in reversed(find_sections(page)):
        stamp = f' data-live-digest="{digest(section.markup(page))}"'
        out = out[: section.name_end] + stamp + out[section.name_end :]
    return out


def sections_of(page: str) -> dict[str, tuple[str, str]]:
    """Each section of a marked page by name: (digest, markup)."""
    out: dict[str, tuple[str, str]] = {}
    for section in find_sections(page):
        markup = section.markup(page)
        out.setdefault(section.name, (digest(markup), markup))
    return out


def title_of(page: str) -> str:
    found = _TITLE.search(page)
    return html.unescape(found.group(1)).strip() if found else ""


def mark_live_sections(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Stamp the live sections of a view's HTML with their digests (before it is cached)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and response.get("Content-Type", "").startswith("text/html"):
            response.content = mark_sections(response.content.decode()).encode()
        return response

    return wrapped
