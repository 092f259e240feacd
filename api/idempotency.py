"""`Idempotency-Key` on POST: the first response is kept and replayed for a retry.

A client that did not hear back from a POST (timeout, dropped connection) sends it again
with the same key; it gets the stored response and nothing happens twice. The same key
with a different request (method, path or body) is a 422: it is a client bug, and
guessing which of the two was meant would be worse. A second request that arrives while
the first is still running gets a 409 and may retry.

The record is claimed before the handler runs (unique per user and key in the
database), stored after a 2xx, and released after any other outcome so the client can
correct the request and retry with the same key. The handler's writes and the stored
response commit in one transaction; a claim with no response older than
`services.IDEMPOTENCY_ABANDONED_AFTER` (its request died: the chaos soak left one behind a
PostgreSQL crash, answering 409 for hours) is taken over by the next retry. Records expire after
`API_IDEMPOTENCY_TTL_HOURS` and are swept by `api.tasks.sweep_idempotency_records`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from django.db import transaction
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api import services
from edge.problems import PROBLEM_CONTENT_TYPE, problem_body, request_id_of

HEADER = "HTTP_IDEMPOTENCY_KEY"
REPLAY_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
# Printable ASCII (a UUID, a hash, a request id): the schema gives this as the header's
# pattern, spaces around it allowed (they are ignored), an empty value being no key.
KEY_PATTERN = r"^[ \t]*(?:[!-~](?:[ -~]*[!-~])?)?[ \t]*$"
_KEY = re.compile(r"[ -~]+")


def fingerprint(request: Request) -> str:
    raw = request._request
    digest = hashlib.sha256()
    digest.update(raw.method.encode() if raw.method else b"")
    digest.update(b"\0" + raw.get_full_path().encode() + b"\0")
    digest.update(raw.body)
    return digest.hexdigest()


def _error(request: Request, code: int, slug: str, message: str) -> Response:
    body = problem_body(
        status=code, code=slug, detail=message, instance=request.path, request_id=request_id_of(request)
    )
    return Response(body, status=code, content_type=PROBLEM_CONTENT_TYPE)


def run(request: Request, handler: Callable[..., Response], *args: Any, **kwargs: Any) -> Response:
    key = request._request.META.get(HEADER, "").strip()
    if not key or not request.user.is_authenticated:
        return handler(request, *args, **kwargs)
    if len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        return _error(
            request, 400, "invalid", f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} printable characters."
        )
    print_ = fingerprint(request)
    record, first = services.idempotency_claim(user=request.user, key=key, fingerprint=print_)
    if not first:
        if record.fingerprint != print_:
            return _error(
                request,
                status.HTTP_422_UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                "This Idempotency-Key was used for a different request.",
            )
        if record.status_code is None:
            return _error(
                request,
                status.HTTP_409_CONFLICT,
                "idempotency_in_progress",
                "A request with this Idempotency-Key is still being processed; retry shortly.",
            )
        replay = Response(record.body, status=record.status_code)
        if record.location:
            replay["Location"] = record.location
        replay[REPLAY_HEADER] = "true"
        return replay
    try:
        # The write and its stored answer commit together: a claim left without an
        # answer (the process died, the database went away) then means nothing was
        # applied, and idempotency_claim lets a retry take it over once abandoned.
        with transaction.atomic():
            response = handler(request, *args, **kwargs)
            if 200 <= response.status_code < 300:
                # Stored as the JSON the client received (Decimals, dates and lazy
                # strings already rendered), so the replay is byte-for-byte the same body.
                services.idempotency_store(
                    record=record,
                    status_code=response.status_code,
                    body=json.loads(JSONRenderer().render(response.data))
                    if response.data is not None
                    else None,
                    location=response.headers.get("Location", ""),
                )
    except BaseException:
        services.idempotency_release(record=record)
        raise
    if not 200 <= response.status_code < 300:
        services.idempotency_release(record=record)
    return response
