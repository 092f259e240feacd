"""SLA policies in the console's credits room: the list, and a policy's page with its
versions over time, where Finance adds new terms from a day. Thin: parse, call one
selector or service, render."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from console.credit_forms import PolicyVersionForm, tiers_text
from console.views import console_view
from core import roles
from core.admin import add_validation_errors
from credits import selectors, services
from credits.models import DowntimeSource, SLAPolicy


@console_view
def policies(request: HttpRequest) -> HttpResponse:
    roles.check(request.user, "credits.review")
    return render(request, "console/policies.html", {"policies": selectors.policies_by_name()})


@console_view
def policy(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the policy and its versions (credits.review). POST: new terms from a day
    (policy.write); a refused day or bad terms come back as errors on the form."""
    roles.check(request.user, "policy.write" if request.method == "POST" else "credits.review")
    found = get_object_or_404(SLAPolicy, pk=pk)
    rows = selectors.policy_version_rows(found)
    if request.method != "POST":
        return _page(request, found, rows, _initial_form(rows))
    form = PolicyVersionForm(request.POST)
    if form.is_valid():
        try:
            version = services.policy_add_version(
                policy=found,
                effective_from=form.cleaned_data["effective_from"],
                changes=form.changes(),
                tiers=form.cleaned_data["tiers"],
                actor=request.user,  # type: ignore[arg-type]
            )
        except ValidationError as exc:
            add_validation_errors(form, exc)
        else:
            messages.success(
                request,
                f"New terms from {version.effective_from:%Y-%m-%d} saved. Months already computed keep "
                "their figures until they are computed again.",
            )
            return HttpResponseRedirect(reverse("console:credit_policy", args=[found.pk]))
    return _page(request, found, rows, form, status=400)


def _initial_form(rows: list[selectors.VersionRow]) -> PolicyVersionForm:
    newest = rows[0].version if rows else None
    if newest is None:
        return PolicyVersionForm()
    terms = newest.terms
    return PolicyVersionForm(
        initial={
            "target": terms["target"],
            "tiers": tiers_text(newest.tiers),
            "cap": terms["cap"],
            "min_downtime_minutes": terms["min_downtime_minutes"],
            "exclude_maintenance": terms["exclude_maintenance"],
            "downtime_source": terms["downtime_source"],
            "measured_down_above": terms["measured_down_above"],
        }
    )


def _shown(terms: dict[str, Any]) -> dict[str, str]:
    """A version's terms as the page shows them: decimals without trailing zeros."""

    def plain(value: Any) -> str:
        return "" if value is None else f"{Decimal(str(value)).normalize():f}"

    return {
        "target": plain(terms["target"]),
        "cap": plain(terms["cap"]),
        "down_above": plain(terms["measured_down_above"]),
        "source": str(DowntimeSource(terms["downtime_source"]).label),
    }


def _page(
    request: HttpRequest,
    found: SLAPolicy,
    rows: list[selectors.VersionRow],
    form: PolicyVersionForm,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "console/policy.html",
        {
            "policy": found,
            "rows": [(row, tiers_text(row.version.tiers), _shown(row.version.terms)) for row in rows],
            "form": form,
            "can_write": roles.allowed(request.user, "policy.write"),
        },
        status=status,
    )
