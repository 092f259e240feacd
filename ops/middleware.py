"""Answer /healthz, /readyz and /metrics first, before every other middleware.

They are probed by machines on the inside (compose healthchecks, load balancers,
Prometheus), by address rather than by the public host name, over plain HTTP: the host
check (ALLOWED_HOSTS), the HTTPS redirect, the /fr/ language prefix, sessions, load
shedding and the page cache must not turn their answer into a 400, a 301 or a cached
page. Only GET and HEAD are answered; anything else gets 405.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed

from ops import views

Handler = Callable[[HttpRequest], HttpResponse]

ROUTES: dict[str, Handler] = {"/healthz": views.healthz, "/readyz": views.readyz, "/metrics": views.metrics}


class OpsMiddleware:
    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = ROUTES.get(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        return view(request)
