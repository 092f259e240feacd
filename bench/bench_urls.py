"""The app's URLs plus /bench/bare/: a Django view returning constant bytes, the
reference the cached status page is measured against (same stack, no work)."""

from __future__ import annotations

from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.urls import path

from statuspage.urls import urlpatterns as app_urlpatterns

_BODY_FILE = Path(__file__).resolve().parent.parent / "var" / "bench" / "bare-body.html"


_body: bytes | None = None


def bare(request: HttpRequest) -> HttpResponse:
    # Constant bytes, read once: the same size as the cached page, none of its work.
    global _body
    if _body is None:
        _body = _BODY_FILE.read_bytes() if _BODY_FILE.exists() else b"ok"
    return HttpResponse(_body, content_type="text/html; charset=utf-8")


bare.shed_exempt = True  # type: ignore[attr-defined]

urlpatterns = [path("bench/bare/", bare), *app_urlpatterns]
