"""The public status pages. Thin: parse the request, call one selector, render.

Times on these pages are shown in settings.DISPLAY_TIME_ZONE, which is activated for the
render so that every `|date` and `<time datetime>` in the templates uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from incidents import public_selectors

View = Callable[..., HttpResponse]


def in_display_zone(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with timezone.override(public_selectors.display_zone()):
            return view(request, *args, **kwargs)

    return wrapper


@in_display_zone
def status_index(request: HttpRequest) -> HttpResponse:
    page = public_selectors.status_page(now=timezone.now())
    return render(request, "public/index.html", {"page": page})


@in_display_zone
def incident_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    page = public_selectors.incident_page(public_id=public_id, user=request.user, now=timezone.now())
    return render(request, "public/incident.html", {"page": page, "incident": page.incident})


@in_display_zone
def product_detail(request: HttpRequest, slug: str) -> HttpResponse:
    page = public_selectors.product_page(slug=slug, now=timezone.now(), page_number=request.GET.get("page"))
    return render(request, "public/product.html", {"page": page, "product": page.product})


@in_display_zone
def history(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    month = public_selectors.parse_month(request.GET.get("month"), now=now)
    page = public_selectors.history_page(month=month, now=now)
    return render(request, "public/history.html", {"page": page})
