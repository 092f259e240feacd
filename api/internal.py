"""One REST request served in process, through the same handler and middleware as a
request from the network: what the MCP tools call, so their answers are the REST API's.

The request carries the caller's `Authorization` header, host, scheme and address, so
authentication, visibility, throttles and the page cache treat it as the caller's own.
Only `get_response` runs: the request_started/finished signals would close the outer
request's database connection.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest


@dataclass(frozen=True)
class Caller:
    """Who calls the MCP tools, and from where (the outer request, or stdio's key)."""

    authorization: str = ""
    host: str = ""
    scheme: str = "http"
    remote_addr: str = "127.0.0.1"
    user: Any = None  # the key's owner (None: anonymous, public reads only)
    key: Any = None  # the api.models.ApiKey, or None

    @classmethod
    def for_site(cls, **kwargs: Any) -> Caller:
        """A caller outside any HTTP request (stdio): SITE_URL's host and scheme."""
        site = urlsplit(settings.SITE_URL)
        return cls(host=site.netloc, scheme=site.scheme or "http", **kwargs)


_handler: WSGIHandler | None = None


def _get_handler() -> WSGIHandler:
    global _handler
    if _handler is None:
        _handler = WSGIHandler()  # loads the middleware once
    return _handler


def rest_call(
    caller: Caller, method: str, path: str, *, query: dict[str, str] | None = None, data: Any = None
) -> tuple[int, Any]:
    """(status, decoded JSON body) of `method path` as the REST API answers `caller`."""
    payload = b"" if data is None else json.dumps(data).encode()
    where = urlsplit(f"//{caller.host}")
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": urlencode(query or {}),
        "SERVER_NAME": where.hostname or "localhost",
        "SERVER_PORT": str(where.port or (443 if caller.scheme == "https" else 80)),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": caller.host,
        "HTTP_ACCEPT": "application/json",
        "REMOTE_ADDR": caller.remote_addr,
        "wsgi.url_scheme": caller.scheme,
        "wsgi.input": io.BytesIO(payload),
        "CONTENT_LENGTH": str(len(payload)),
        "CONTENT_TYPE": "application/json",
    }
    if caller.authorization:
        environ["HTTP_AUTHORIZATION"] = caller.authorization
    response = _get_handler().get_response(WSGIRequest(environ))
    content = b"".join(response) if response.streaming else response.content  # type: ignore[attr-defined]
    response.close()
    try:
        return response.status_code, json.loads(content) if content else None
    except ValueError:
        return response.status_code, content.decode(errors="replace")
