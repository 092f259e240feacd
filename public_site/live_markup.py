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
_TAG = re.compile(r"<!--.*?-->|<(/?)([a-zA-Z][\w:-]*)([^>]*)>", re.DOTALL)
_NAME = re.compile(r'\sdata-live="([\w-]+)"')
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


def find_sections(page: str) -> list[Section]:
    """The outermost data-live elements of a page, in document order."""
    found: list[Section] = []
    # Open elements: (tag, section name or "", start offset, offset after the name).
    stack: list[tuple[str, str, int, int]] = []
    inside = 0  # open sections (only the outermost one is kept)
    for match in _TAG.finditer(page):
        closing, tag, attrs = match.group(1), (match.group(2) or "").lower(), match.group(3) or ""
        if not tag:
            continue  # a comment
        if closing:
            while stack:
                open_tag, name, start, name_end = stack.pop()
                if name:
                    inside -= 1
                    if not inside:
                        found.append(Section(name, start, match.end(), name_end))
                if open_tag == tag:
                    break
            continue
        if tag in VOID or attrs.rstrip().endswith("/"):
            continue
        named = _NAME.search(attrs)
        if named:
            inside += 1
            stack.append((tag, named.group(1), match.start(), match.start(3) + named.end()))
        else:
            stack.append((tag, "", match.start(), 0))
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
