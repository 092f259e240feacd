"""A strict checker of JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/).

No maintained package checks version 1.1 (the one on PyPI, jsonfeedvalidator 0.0.3,
predates it), so this is the spec's field table, read strictly: the required fields,
every field's type, at least one of content_html and content_text, RFC 3339 dates,
absolute URLs, authors with at least one member, and no keys the spec does not define
unless they are extensions (a leading underscore). The deprecated 1.0 `author` is
refused: a 1.1 feed says `authors`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

VERSION = "https://jsonfeed.org/version/1.1"

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")

# field -> kind; "url" is a string holding an absolute http(s) URL.
TOP = {
    "version": "str",
    "title": "str",
    "home_page_url": "url",
    "feed_url": "url",
    "description": "str",
    "user_comment": "str",
    "next_url": "url",
    "icon": "url",
    "favicon": "url",
    "authors": "authors",
    "language": "language",
    "expired": "bool",
    "hubs": "hubs",
    "items": "items",
}
TOP_REQUIRED = ("version", "title", "items")
ITEM = {
    "id": "str",
    "url": "url",
    "external_url": "url",
    "title": "str",
    "content_html": "str",
    "content_text": "str",
    "summary": "str",
    "image": "url",
    "banner_image": "url",
    "date_published": "date",
    "date_modified": "date",
    "authors": "authors",
    "tags": "tags",
    "language": "language",
    "attachments": "attachments",
}
AUTHOR = {"name": "str", "url": "url", "avatar": "url"}
HUB = {"type": "str", "url": "url"}
ATTACHMENT = {
    "url": "url",
    "mime_type": "str",
    "title": "str",
    "size_in_bytes": "number",
    "duration_in_seconds": "number",
}


def problems(document: Any) -> list[str]:
    """Every way `document` breaks JSON Feed 1.1; empty when it conforms."""
    found: list[str] = []
    if not isinstance(document, dict):
        return ["the feed is not a JSON object"]
    _object(document, TOP, "feed", found)
    for name in TOP_REQUIRED:
        if name not in document:
            found.append(f"feed: `{name}` is required")
    if document.get("version") != VERSION:
        found.append(f"feed: `version` must be {VERSION}")
    ids = [item.get("id") for item in document.get("items") or [] if isinstance(item, dict)]
    if len(ids) != len(set(map(str, ids))):
        found.append("items: ids are not unique")
    return found


def _object(value: dict[str, Any], fields: dict[str, str], where: str, found: list[str]) -> None:
    for key, member in value.items():
        if key.startswith("_"):
            continue  # an extension
        kind = fields.get(key)
        if kind is None:
            found.append(f"{where}: `{key}` is not a JSON Feed 1.1 field")
            continue
        _check(kind, member, f"{where}.{key}", found)


def _check(kind: str, value: Any, where: str, found: list[str]) -> None:
    if kind in ("str", "url", "date", "language"):
        if not isinstance(value, str):
            found.append(f"{where}: must be a string")
            return
        if kind == "url" and not (urlsplit(value).scheme in ("http", "https") and urlsplit(value).netloc):
            found.append(f"{where}: must be an absolute http(s) URL, not {value!r}")
        if kind == "date" and not _is_rfc3339(value):
            found.append(f"{where}: must be an RFC 3339 date-time, not {value!r}")
        if kind == "language" and not _LANGUAGE.match(value):
            found.append(f"{where}: must be an RFC 5646 language tag, not {value!r}")
    elif kind == "bool":
        if not isinstance(value, bool):
            found.append(f"{where}: must be true or false")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            found.append(f"{where}: must be a number")
    elif kind == "tags":
        if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
            found.append(f"{where}: must be an array of strings")
    else:
        _array(kind, value, where, found)


def _array(kind: str, value: Any, where: str, found: list[str]) -> None:
    if not isinstance(value, list):
        found.append(f"{where}: must be an array")
        return
    fields, required = {
        "authors": (AUTHOR, ()),
        "hubs": (HUB, ("type", "url")),
        "attachments": (ATTACHMENT, ("url", "mime_type")),
        "items": (ITEM, ("id",)),
    }[kind]
    for n, member in enumerate(value):
        at = f"{where}[{n}]"
        if not isinstance(member, dict):
            found.append(f"{at}: must be an object")
            continue
        _object(member, fields, at, found)
        found.extend(f"{at}: `{name}` is required" for name in required if name not in member)
        if kind == "authors" and not any(name in member for name in AUTHOR):
            found.append(f"{at}: an author needs a name, url or avatar")
        if kind == "items" and "content_html" not in member and "content_text" not in member:
            found.append(f"{at}: needs content_html or content_text")


def _is_rfc3339(value: str) -> bool:
    if not _RFC3339.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
