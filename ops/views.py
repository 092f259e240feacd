"""/healthz, /readyz and /metrics (answered by ops.middleware.OpsMiddleware, ahead of the
host, TLS-redirect, language and load-shedding rules: see that module)."""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

from edge.ratelimit import client_address
from ops import health


def _no_store(response: HttpResponse) -> HttpResponse:
    add_never_cache_headers(response)
    return response


def healthz(request: HttpRequest) -> HttpResponse:
    """The process answers: nothing else is asked (a database outage must not get a
    healthy web process restarted)."""
    return _no_store(JsonResponse({"status": "ok"}))


def readyz(request: HttpRequest) -> HttpResponse:
    checks = health.readiness()
    failed = sorted(name for name, result in checks.items() if result != "ok")
    body = {"status": "failing" if failed else "ok", "failed": failed, "checks": checks}
    return _no_store(JsonResponse(body, status=503 if failed else 200))


def _bearer(request: HttpRequest) -> str | None:
    scheme, _sep, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _from_allowed_network(request: HttpRequest) -> bool:
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(
        address in ipaddress.ip_network(net, strict=False) for net in settings.METRICS_ALLOWED_NETWORKS
    )


def metrics_access(request: HttpRequest) -> int | None:
    """None when the caller may read /metrics, else the status to refuse with: 403 for a
    wrong token, 404 (as if there were nothing here) for anyone else."""
    token = _bearer(request)
    expected = settings.METRICS_TOKEN
    if token is not None:
        if expected and hmac.compare_digest(token.encode(), expected.encode()):
            return None
        return 403
    return None if _from_allowed_network(request) else 404


def metrics(request: HttpRequest) -> HttpResponse:
    # Imported here: prometheus_client and the selectors load only for the scraper.
    from ops.metrics import exposition

    refused = metrics_access(request)
    if refused is not None:
        return _no_store(HttpResponse(status=refused, content_type="text/plain; charset=utf-8"))
    body, content_type = exposition(request.META.get("HTTP_ACCEPT", ""))
    return _no_store(HttpResponse(body, content_type=content_type))
