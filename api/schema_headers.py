"""Response headers and error media types in the OpenAPI document (api.schema.postprocess).

drf-spectacular documents bodies; the headers we send are what generated clients cannot
guess, so each operation declares the ones it sends (as `$ref`s to `components/headers`):

- every response: `X-Request-ID`; every v1 response: `RateLimit` and `RateLimit-Policy`;
- 429 and 503: `Retry-After`; 201: `Location`; error bodies: `Deprecation` and `Sunset`
  (their `error` object is deprecated);
- a successful GET (200) and PATCH/PUT: `ETag`; a successful POST: `Idempotent-Replayed`;
- a list (paginated) 200: `Link` (rel="next" / rel="prev").

Error responses (4xx/5xx) are `application/problem+json` (RFC 9457).
"""

from __future__ import annotations

from typing import Any

from edge.problems import PROBLEM_CONTENT_TYPE

_STRING = {"type": "string"}

HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "This request's id (yours if you sent a sane one), also in error bodies and our logs.",
        "schema": _STRING,
    },
    "RateLimit": {
        "description": (
            "The quota left (IETF draft-ietf-httpapi-ratelimit-headers): `r` requests remain in this "
            'window and it ends in `t` seconds, e.g. `"token";r=1187;t=42`.'
        ),
        "schema": _STRING,
    },
    "RateLimit-Policy": {
        "description": 'The quota: `q` requests per `w` seconds, e.g. `"token";q=1200;w=60`.',
        "schema": _STRING,
    },
    "Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}},
    "Location": {
        "description": "The created resource (a URI reference: our 201s send its path).",
        "schema": {"type": "string", "format": "uri-reference"},
    },
    "ETag": {
        "description": "A strong validator of this representation: send it back as `If-Match` on writes.",
        "schema": _STRING,
    },
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Deprecation": {
        "description": "RFC 9745: this error body's `error` object is deprecated since this time (see Sunset).",
        "schema": _STRING,
    },
    "Sunset": {
        "description": "RFC 8594: after this date the deprecated `error` object may be gone from error bodies.",
        "schema": _STRING,
    },
    "Link": {
        "description": 'RFC 8288 links to the next and previous pages (`rel="next"`, `rel="prev"`), as in the body.',
        "schema": _STRING,
    },
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


def _headers_for(path: str, method: str, code: str, response: dict[str, Any]) -> list[str]:
    names = ["X-Request-ID"]
    if path.startswith("/api/v1/"):
        names += ["RateLimit", "RateLimit-Policy"]
    if code[0] in "45" and response.get("content"):
        names += ["Deprecation", "Sunset"]
    if code in ("429", "503"):
        names.append("Retry-After")
    if code == "201":
        names.append("Location")
    if code == "200" and method in ("get", "patch", "put"):
        names.append("ETag")
    if code.startswith("2") and method == "post":
        names.append("Idempotent-Replayed")
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    if (
        code == "200"
        and method == "get"
        and str(schema.get("$ref", "")).startswith("#/components/schemas/Paginated")
    ):
        names.append("Link")
    return names


def declare_headers(result: dict[str, Any]) -> None:
    used: set[str] = set()
    for path, path_item in result.get("paths", {}).items():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for code, response in operation["responses"].items():
                if "$ref" in response:
                    continue
                names = _headers_for(path, method, str(code), response)
                headers = response.setdefault("headers", {})
                for name in names:
                    headers.setdefault(name, _ref(name))
                used.update(names)
                content = response.get("content", {})
                if str(code)[0] in "45" and "application/json" in content:
                    response["content"] = {PROBLEM_CONTENT_TYPE: content.pop("application/json"), **content}
    problem = result.get("components", {}).get("schemas", {}).get("Error", {})
    if "error" in problem.get("properties", {}):
        problem["properties"]["error"]["deprecated"] = True
    components = result.setdefault("components", {}).setdefault("headers", {})
    for name in sorted(used):
        components[name] = HEADERS[name]
