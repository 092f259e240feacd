"""The public status pages. Thin: parse the request, call one selector, render.

Times on these pages are shown in settings.DISPLAY_TIME_ZONE, which is activated for the
render so that every `|date` and `<time datetime>` in the templates uses it.

Pages that are the same for every visitor go through `page_cache.public_page`: keyed by
the public-state version (a change shows on the next request), one rebuild at a time,
and `/` is snapshotted to disk for database outages. The incident page differs for
staff (previews of non-public incidents), so only anonymous requests share its cache.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.cache import patch_vary_headers

from core.timezones import in_display_zone
from edge.http import PUBLIC_CACHE_CONTROL, is_anonymous_request, version_time
from edge.page_cache import public_page
from edge.version import public_state_version
from insights import present as insights_present
from insights import selectors as insights_selectors
from public_site import embeds
from public_site import history as public_history
from public_site import pages as public_selectors
from public_site import uptime as public_uptime
from public_site.cards import status_cards
from public_site.languages import with_language_entry
from public_site.live_markup import mark_live_sections
from upstream import selectors as upstream_selectors


@public_page("index", cheap=True)
@mark_live_sections
@in_display_zone
def status_index(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    page = public_selectors.status_page(now=now)
    recent = public_history.recent_incidents(now=now, days=settings.RECENT_INCIDENT_DAYS)
    cards = status_cards(page)  # the product rows, from cached fragments where current
    # "Last updated" is the last public change, not the render: the page stays the same
    # bytes until something changes (the live script then transfers nothing).
    updated_at = version_time(public_state_version()) or now
    context = {"page": page, "recent": recent, "cards": cards, "updated_at": updated_at}
    # Third-party services: only when the operator turned them on, and only the providers
    # marked shown (none: no section, the page unchanged).
    if settings.UPSTREAM_ON_PUBLIC_PAGES:
        context["third_party"] = upstream_selectors.third_party_section(now=now)
    return render(request, "public/index.html", context)


# `/` in English first asks whether the visitor prefers another language (a redirect
# that costs no render); /fr/ and the rest are served straight from the page cache.
status_index_entry = with_language_entry(status_index)


def _render_incident(request: HttpRequest, public_id: str, user: Any) -> HttpResponse:
    page = public_selectors.incident_page(public_id=public_id, user=user, now=timezone.now())
    causes = upstream_selectors.incident_causes(page.incident.pk) if settings.UPSTREAM_ON_PUBLIC_PAGES else []
    return render(
        request, "public/incident.html", {"page": page, "incident": page.incident, "causes": causes}
    )


@public_page("incident")
@mark_live_sections
@in_display_zone
def incident_anonymous(request: HttpRequest, public_id: str) -> HttpResponse:
    # An explicit anonymous user: reading request.user would load the session and make
    # the response vary on the cookie.
    return _render_incident(request, public_id, AnonymousUser())


@mark_live_sections
@in_display_zone
def _incident_signed_in(request: HttpRequest, public_id: str) -> HttpResponse:
    return _render_incident(request, public_id, request.user)


def incident_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    if is_anonymous_request(request):
        response = incident_anonymous(request, public_id=public_id)
    else:
        response = _incident_signed_in(request, public_id=public_id)
    # The session cookie chooses between the two (staff see previews), so even the
    # shared anonymous copy says so: a cache must not hand it to a signed-in reader.
    patch_vary_headers(response, ("Cookie",))
    return response


# Query values that make cache variants (edge.page_cache): the canonical value, None for
# the default page, or 404. Values the page has no data for are refused by the views
# below after the render, and a 404 is never cached: junk cannot fill the cache.
MAX_PAGE_NUMBER = 100_000


def page_number_variant(value: str) -> str | None:
    if not value.isascii() or not value.isdigit() or value.startswith("0") or int(value) > MAX_PAGE_NUMBER:
        raise Http404("No such page.")
    return None if value == "1" else value


def month_variant(value: str) -> str | None:
    now = timezone.now()
    month = public_history.parse_month(value, now=now)  # Http404 unless it looks like 2009-09
    current = public_history.parse_month(None, now=now)
    if month > current:
        raise Http404("No such month.")
    return None if month == current else f"{month:%Y-%m}"


@public_page("product", vary_on_query={"page": page_number_variant}, cheap=True)
@mark_live_sections
@in_display_zone
def product_detail(request: HttpRequest, slug: str) -> HttpResponse:
    requested = int(request.GET.get("page") or 1)
    page = public_history.product_page(slug=slug, now=timezone.now(), page_number=requested)
    if page.page.number != requested:
        raise Http404("No such page.")  # past the last page
    return render(
        request,
        "public/product.html",
        {"page": page, "product": page.product, "badge_snippet": embeds.product_badge_snippet(page.product)},
    )


def product_variant(value: str) -> str | None:
    # A product filter names one of a few products; anything else is refused by the
    # page with a 400 (history_filter), and a 400 is never cached.
    return value[:101]


def _render_history(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    month = public_history.parse_month(request.GET.get("month"), now=now)
    error = ""
    try:
        flt = public_history.history_filter(product=request.GET.get("product"), text=request.GET.get("q"))
    except public_history.HistoryFilterError as exc:
        error, flt = str(exc), public_history.HistoryFilter()
    page = public_history.history_page(month=month, now=now, flt=flt)
    # The archive runs from the month before its first incident (where the "previous"
    # links end) to this month; nothing before it is a page, nor a cache entry.
    current = public_history.parse_month(None, now=now)
    first = min((m.month for year in page.years for m in year.months), default=current)
    floor = public_history.add_months(min(first, current), -1)
    if month < floor:
        raise Http404("No such month.")
    context = {
        "page": page,
        "earliest_month": floor,
        "filter_error": error,
        "search_max_length": public_history.SEARCH_MAX_LENGTH,
        "form": {"product": request.GET.get("product", ""), "q": request.GET.get("q", "")},
    }
    return render(request, "public/history.html", context, status=400 if error else 200)


@public_page("history", vary_on_query={"month": month_variant, "product": product_variant})
@in_display_zone
def _history_cached(request: HttpRequest) -> HttpResponse:
    return _render_history(request)


@in_display_zone
def _history_search(request: HttpRequest) -> HttpResponse:
    response = _render_history(request)
    if response.status_code == 200:
        response["Cache-Control"] = PUBLIC_CACHE_CONTROL
    return response


def history(request: HttpRequest) -> HttpResponse:
    """The archive by month, optionally for one product. A text search is rendered for
    each request instead of cached: every word searched would otherwise be a cache entry
    (its cost is bounded by history_filter and history_page: one month, 100 characters)."""
    if request.GET.get("q", "").strip():
        return _history_search(request)
    return _history_cached(request)


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
            "chart": public_uptime.uptime_chart(report),
            "table": public_uptime.uptime_table(report),
            "rule": public_uptime.weighting_rule(report),
        },
    )


@public_page("product-uptime-csv")
def product_uptime_csv(request: HttpRequest, slug: str) -> HttpResponse:
    report = insights_selectors.product_uptime_report(slug=slug, now=timezone.now())
    body = insights_present.csv_text(insights_present.uptime_table(report))
    return HttpResponse(body, content_type="text/csv; charset=utf-8")
