"""The public status pages. Thin: parse the request, call one selector, render.

Times on these pages are shown in settings.DISPLAY_TIME_ZONE, which is activated for the
render so that every `|date` and `<time datetime>` in the templates uses it.

Pages that are the same for every visitor go through `page_cache.public_page`: keyed by
the public-state version (a change shows on the next request), one rebuild at a time,
and `/` is snapshotted to disk for database outages. The incident page differs for
staff (previews of non-public incidents), so only anonymous requests share its cache.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from edge.http import is_anonymous_request
from edge.page_cache import public_page
from insights import present as insights_present
from insights import selectors as insights_selectors
from public_site import history as public_history
from public_site import pages as public_selectors

View = Callable[..., HttpResponse]


def in_display_zone(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with timezone.override(public_selectors.display_zone()):
            return view(request, *args, **kwargs)

    return wrapper


@public_page("index")
@in_display_zone
def status_index(request: HttpRequest) -> HttpResponse:
    page = public_selectors.status_page(now=timezone.now())
    return render(request, "public/index.html", {"page": page})


def _render_incident(request: HttpRequest, public_id: str, user: Any) -> HttpResponse:
    page = public_selectors.incident_page(public_id=public_id, user=user, now=timezone.now())
    return render(request, "public/incident.html", {"page": page, "incident": page.incident})


@public_page("incident")
@in_display_zone
def _incident_anonymous(request: HttpRequest, public_id: str) -> HttpResponse:
    # An explicit anonymous user: reading request.user would load the session and make
    # the response vary on the cookie.
    return _render_incident(request, public_id, AnonymousUser())


@in_display_zone
def _incident_signed_in(request: HttpRequest, public_id: str) -> HttpResponse:
    return _render_incident(request, public_id, request.user)


def incident_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    if is_anonymous_request(request):
        return _incident_anonymous(request, public_id=public_id)
    return _incident_signed_in(request, public_id=public_id)


@public_page("product", vary_on_query=("page",))
@in_display_zone
def product_detail(request: HttpRequest, slug: str) -> HttpResponse:
    page = public_history.product_page(slug=slug, now=timezone.now(), page_number=request.GET.get("page"))
    return render(request, "public/product.html", {"page": page, "product": page.product})


@public_page("history", vary_on_query=("month",))
@in_display_zone
def history(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    month = public_history.parse_month(request.GET.get("month"), now=now)
    page = public_history.history_page(month=month, now=now)
    return render(request, "public/history.html", {"page": page})


# The uptime report: the same for every visitor, no query parameters.
@public_page("product-uptime")
@in_display_zone
def product_uptime(request: HttpRequest, slug: str) -> HttpResponse:
    report = insights_selectors.product_uptime_report(slug=slug, now=timezone.now())
    return render(
        request,
        "public/uptime.html",
        {
            "report": report,
            "product": report.product,
            "chart": insights_present.uptime_chart(report),
            "table": insights_present.uptime_table(report),
        },
    )


@public_page("product-uptime-csv")
def product_uptime_csv(request: HttpRequest, slug: str) -> HttpResponse:
    report = insights_selectors.product_uptime_report(slug=slug, now=timezone.now())
    body = insights_present.csv_text(insights_present.uptime_table(report))
    return HttpResponse(body, content_type="text/csv; charset=utf-8")
