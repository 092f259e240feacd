"""Project-wide HTTP behaviour: security headers, database outages, load shedding, and
the lifetime of staff sessions and the per-address login limit.

The status page is visited hardest when something else is broken, so these pieces make
it degrade instead of collapse: a database outage becomes a clean 503 with Retry-After
(the public page itself is served from its snapshot before it gets here), and work
beyond a process's capacity is refused fast instead of queueing without bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import logout
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext as _

from edge import ratelimit
from edge.deadline import deadline
from edge.problems import problem_response
from edge.stale import Unavailable

logger = logging.getLogger(__name__)

Handler = Callable[[HttpRequest], HttpResponse]

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def _wants_json(request: HttpRequest) -> bool:
    path = request.path
    return path.startswith("/api/") or path.endswith(".json")


def service_unavailable(request: HttpRequest, *, message: str, retry_after: int) -> HttpResponse:
    """A cheap 503 that tells clients when to come back. Never touches the database."""
    response: HttpResponse
    if _wants_json(request):
        response = problem_response(request, 503, "unavailable", message)
    else:
        body = render_to_string("503.html", {"message": message, "retry_after": retry_after})
        response = HttpResponse(body, status=503)
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


class SecurityHeadersMiddleware:
    """Content-Security-Policy without inline script, and a few headers Django lacks."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Permissions-Policy", "interest-cohort=()")
        return response


class DatabaseUnavailableMiddleware:
    """Turn a lost or timed-out database into 503 + Retry-After, never a traceback."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Unavailable):
            return service_unavailable(request, message=exception.message, retry_after=exception.retry_after)
        if isinstance(exception, OperationalError | InterfaceError) or (
            isinstance(exception, DatabaseError) and "statement timeout" in str(exception)
        ):
            logger.warning("database unavailable for %s: %s", request.path, exception)
            return service_unavailable(
                request,
                message=_("The service is temporarily unavailable. Please retry shortly."),
                retry_after=settings.DB_UNAVAILABLE_RETRY_AFTER,
            )
        return None


class RequestDeadlineMiddleware:
    """Bound the database time of every request (edge/deadline.py): a request whose
    queries would run past REQUEST_DEADLINE seconds gets OperationalError instead, which
    becomes a 503, so no thread is held by a slow or silent database for longer."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with deadline(settings.REQUEST_DEADLINE or None):
            return self.get_response(request)


class LoadSheddingMiddleware:
    """Bound the number of requests a process works on at once.

    Each process admits at most MAX_CONCURRENT_REQUESTS; the next one gets an immediate
    503 with Retry-After instead of waiting in a queue that only grows while the herd
    keeps arriving. Static files and cached public reads are cheap and are let through
    (their views are marked `shed_exempt`); the limit protects the expensive rest.
    """

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        self.limit = settings.MAX_CONCURRENT_REQUESTS
        self.slots = threading.BoundedSemaphore(self.limit) if self.limit > 0 else None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.get_response(request)
        finally:
            # The slot taken in process_view is held for the whole view and released here.
            if getattr(request, "_shed_slot_held", False) and self.slots is not None:
                self.slots.release()

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: object,
        view_kwargs: object,
    ) -> HttpResponse | None:
        if self.slots is None or getattr(view_func, "shed_exempt", False):
            return None
        if not self.slots.acquire(blocking=False):
            return service_unavailable(
                request,
                message=_("Too busy right now. Please retry shortly."),
                retry_after=settings.SHED_RETRY_AFTER,
            )
        request._shed_slot_held = True  # type: ignore[attr-defined]
        return None


def shed_exempt(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view as cheap (served from cache): load shedding lets it through."""
    view.shed_exempt = True  # type: ignore[attr-defined]
    return view


class SessionLifetimeMiddleware:
    """Ends a signed-in session after SESSION_IDLE_TIMEOUT seconds without a request, or
    SESSION_ABSOLUTE_LIFETIME seconds after it began, whichever comes first.

    Only requests that carry a session cookie are looked at: touching the session of a
    cookieless visitor would add `Vary: Cookie` to public pages. The last activity is
    written at most once a minute, so a busy console does not write the session per request.
    """

    STARTED = "_session_started_at"
    SEEN = "_session_seen_at"
    RESOLUTION = 60

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.SESSION_COOKIE_NAME in request.COOKIES and request.user.is_authenticated:
            self.check(request)
        return self.get_response(request)

    def check(self, request: HttpRequest) -> None:
        session = request.session
        now = int(time.time())
        started = session.get(self.STARTED)
        seen = session.get(self.SEEN)
        if started is None or seen is None:
            session[self.STARTED] = session[self.SEEN] = now
            return
        idle, age = now - int(seen), now - int(started)
        if idle > settings.SESSION_IDLE_TIMEOUT or age > settings.SESSION_ABSOLUTE_LIFETIME:
            logout(request)  # flushes the session; the view then sees an anonymous visitor
            return
        if idle >= self.RESOLUTION:
            session[self.SEEN] = now


class LoginRateLimitMiddleware:
    """At most LOGIN_RATE_PER_ADDRESS login POSTs per client address per AXES_COOLOFF_TIME: the per-address limit beside django-axes' per account-and-address lockout,
    so one address cannot try many accounts, while no account is locked for everyone."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path_info == reverse("admin:login"):
            verdict = ratelimit.hit(
                scope="login",
                value=ratelimit.client_address(request),
                limit=settings.LOGIN_RATE_PER_ADDRESS,
                window=int(settings.AXES_COOLOFF_TIME.total_seconds()),
            )
            if not verdict.allowed:
                response = HttpResponse(
                    _("Too many sign-in attempts from your address. Try again later."),
                    status=429,
                    content_type="text/plain; charset=utf-8",
                )
                response["Retry-After"] = str(verdict.retry_after)
                return response
        return self.get_response(request)
