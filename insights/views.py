"""Staff insights pages. Thin: check access, parse the filter, call one selector, render.

Mounted at /manage/insights/ (statuspage/urls.py). Staff only: anonymous visitors are sent
to the login page, signed-in non-staff users get 403. The responses are never cached:
they show staff-only incidents.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache

from core import roles
from incidents import uptime
from insights import metrics, present, selectors
from insights.forms import InsightsFilterForm
from postmortems.selectors import recurrences_per_product

View = Callable[..., HttpResponse]


def staff_required(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = request.user
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not user.is_staff:
            raise PermissionDenied("Staff only.")
        roles.check(user, "console.view")
        return view(request, *args, **kwargs)

    return wrapper


def _page(
    request: HttpRequest, *, every_row: bool = False, period_response: bool = False
) -> tuple[InsightsFilterForm, selectors.InsightsPage | None]:
    now = timezone.now()
    tz = selectors.display_zone()
    form = InsightsFilterForm(
        request.GET, choices=selectors.scope_choices(), today=uptime.local_date(now, tz)
    )
    if not form.is_valid():
        return form, None
    scope = form.scope_choices.resolve(form.cleaned_data["scope"])
    if scope is None:  # the choice field has already refused unknown keys
        raise Http404("No such product or group.")
    page = selectors.insights_page(
        scope=scope,
        granularity=form.cleaned_data["by"],
        last=form.cleaned_data["until"],
        now=now,
        every_row=every_row,
        period_response=period_response,
    )
    return form, page


@never_cache
@staff_required
def insights(request: HttpRequest) -> HttpResponse:
    with timezone.override(selectors.display_zone()):
        form, page = _page(request)
        if page is None:
            return render(request, "insights/index.html", {"form": form, "page": None}, status=400)
        return render(
            request,
            "insights/index.html",
            {
                "form": form,
                "page": page,
                "panels": present.insights_panels(page),
                "query": request.GET.urlencode(),
                "rule": selectors.weighting_rule(page.weights),
                "last_period": page.periods[-1].label,
                "median_resolve": metrics.format_hours(page.response.resolve.median),
                "recurrences": recurrences_per_product(
                    since=page.start, until=page.end, product_ids=[p.pk for p in page.scope.products]
                ),
            },
        )


@never_cache
@staff_required
def insights_csv(request: HttpRequest, name: str) -> HttpResponse:
    if name not in present.CHARTS:
        raise Http404("No such table.")
    # The incidents CSV lists every incident of the range, the response CSV each period's
    # distributions: only they read what the page does not show.
    form, page = _page(request, every_row=name == "incidents", period_response=name == "response")
    if page is None:
        return HttpResponse("Invalid filter: " + form.errors.as_text(), status=400, content_type="text/plain")
    table = present.insights_table(page, name)
    response = HttpResponse(present.csv_text(table), content_type="text/csv; charset=utf-8")
    scope = page.scope.key.replace(":", "-")
    filename = f"insights-{name}-{scope}-{page.granularity}-{page.periods[-1].first_day:%Y-%m}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
