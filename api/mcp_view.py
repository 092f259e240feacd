"""`/mcp`: the MCP server (api.mcp_tools) over the streamable HTTP transport, inside the
WSGI app. Design: docs/adr/0032-mcp-server.md.

The SDK's transport is an ASGI app; we serve WSGI (gunicorn gthread). Each request runs a
fresh stateless, JSON-answering `StreamableHTTPSessionManager` through asgiref: no session
outlives its request, so any worker thread of any process can answer any request, as with
the REST API. The key is checked first, by the REST API's own authentication (a bad key
is the same 401), and the caller handed to the tools.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from api.authentication import ApiKeyAuthentication
from api.internal import Caller
from api.mcp_tools import CALLER, SERVER

# Hop-by-hop and length headers Django sets itself.
_SKIPPED = {b"content-length", b"connection", b"transfer-encoding"}


def _scope(request: HttpRequest) -> dict[str, Any]:
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for key, value in request.META.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if request.META.get(key):
            headers.append((name, str(request.META[key]).encode("latin-1")))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.get_host(), 0),
    }


async def _serve(scope: dict[str, Any], body: bytes, caller: Caller) -> tuple[int, list[Any], bytes]:
    CALLER.set(caller)
    manager = StreamableHTTPSessionManager(
        # MCPServer keeps its protocol server private; the SDK's own streamable_http_app
        # reads it the same way (pinned SDK version, requirements.txt).
        app=SERVER._lowlevel_server,
        stateless=True,
        json_response=True,
    )
    sent = False
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return start.get("status", 500), start.get("headers", []), b"".join(chunks)


class McpView(APIView):
    """POST JSON-RPC to /mcp (MCP streamable HTTP); anonymous callers get the public reads."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [AllowAny]
    schema = None  # not a REST resource: docs/api.md describes it

    def _bridge(self, request: Request) -> HttpResponse:
        django_request = request._request
        caller = Caller(
            authorization=django_request.META.get("HTTP_AUTHORIZATION", ""),
            host=django_request.get_host(),
            scheme=django_request.scheme or "http",
            remote_addr=django_request.META.get("REMOTE_ADDR", ""),
            user=request.user if request.auth is not None else None,
            key=request.auth,
        )
        status, headers, content = async_to_sync(_serve)(_scope(django_request), django_request.body, caller)
        response = HttpResponse(content, status=status)
        for name, value in headers:
            if name.lower() not in _SKIPPED:
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response

    def post(self, request: Request) -> HttpResponse:
        return self._bridge(request)

    def get(self, request: Request) -> HttpResponse:
        return self._bridge(request)

    def delete(self, request: Request) -> HttpResponse:
        return self._bridge(request)
