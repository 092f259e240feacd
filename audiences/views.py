"""The audience pages and their Statuspage-shaped JSON. Thin: the gate, one selector,
render. Private answers are cached per page and language (audiences.cache), never in
the public page cache, and always say `Cache-Control: private`.

Every request reads who is asking before looking the page up, so a private page and a
missing one answer with the same 404 and the same headers (docs/adr/0028-audience-pages.md).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.translation import get_language

from audiences import cache as page_cache
from audiences import v2
from audiences.models import Page
from audiences.selectors import page_get_for_reader, page_incident, page_view, signed_in_customer_id
from core.timezones import in_display_zone
from edge.ratelimit import client_address

PRIVATE_CACHE_CONTROL = "private, no-cache"


def _key_of(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip() or None
    return request.GET.get("key") or None


def _gate(request: HttpRequest, slug: str, *, key: str | None = None) -> Page:
    user: Any = request.user  # read first: the same Vary whether or not the page exists
    return page_get_for_reader(
        slug=slug,
        user=user,
        customer_id=signed_in_customer_id(request),
        key=key,
        address=client_address(request),
    )


def _finish(response: HttpResponse, page: Page) -> HttpResponse:
    if page.is_private:
        response["Cache-Control"] = PRIVATE_CACHE_CONTROL
    patch_vary_headers(response, ("Cookie", "Authorization"))
    return response


@in_display_zone
def page_detail(request: HttpRequest, slug: str) -> HttpResponse:
    page = _gate(request, slug)

    def build() -> bytes:
        view = page_view(page=page, now=timezone.now())
        return render(request, "audiences/page.html", {"view": view, "page": view.page}).content

    body = page_cache.cached(page=page, variant=f"html:{get_language()}:{request.path}", build=build)
    return _finish(HttpResponse(body, content_type="text/html; charset=utf-8"), page)


@in_display_zone
def incident_detail(request: HttpRequest, slug: str, public_id: str) -> HttpResponse:
    page = _gate(request, slug)

    def build() -> bytes:
        entry = page_incident(page=page, public_id=public_id, now=timezone.now())
        return render(request, "audiences/incident.html", {"page": page, "entry": entry}).content

    body = page_cache.cached(
        page=page, variant=f"incident:{public_id}:{get_language()}:{request.path}", build=build
    )
    return _finish(HttpResponse(body, content_type="text/html; charset=utf-8"), page)


def _json(request: HttpRequest, slug: str, part: str) -> HttpResponse:
    page = _gate(request, slug, key=_key_of(request))

    def build() -> dict[str, Any]:
        return v2.build(part, view=page_view(page=page, now=timezone.now()), request=request)

    data = page_cache.cached_data(page=page, variant=f"v2:{part}", build=build)
    return _finish(JsonResponse(data, json_dumps_params={"ensure_ascii": False}), page)


def summary(request: HttpRequest, slug: str) -> HttpResponse:
    return _json(request, slug, "summary")


def status(request: HttpRequest, slug: str) -> HttpResponse:
    return _json(request, slug, "status")


def components(request: HttpRequest, slug: str) -> HttpResponse:
    return _json(request, slug, "components")


def incidents(request: HttpRequest, slug: str) -> HttpResponse:
    return _json(request, slug, "incidents")
