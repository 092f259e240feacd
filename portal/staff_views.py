"""The console page where Finance says who may sign in to the customer portal
(`portal.access`): email domains and named contacts, and customers' own OpenID Connect
providers. English only, like the rest of the console."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core import roles
from portal import selectors, services
from portal.forms import AccessForm, OidcProviderForm
from portal.models import OidcProvider, PortalAccess

View = Callable[..., HttpResponse]


def staff_page(view: View) -> View:
    """Staff with `portal.access` (else the console's refusal page), never cached."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            roles.check(request.user, "portal.access")
            response = view(request, *args, **kwargs)
        except PermissionDenied as refused:
            response = render(request, "console/403.html", {"message": str(refused)}, status=403)
        response["Cache-Control"] = "no-store"
        return response

    return staff_member_required(wrapper)


def _page(request: HttpRequest, form: AccessForm, oidc_form: OidcProviderForm) -> HttpResponse:
    context = {
        "form": form,
        "oidc_form": oidc_form,
        "rows": selectors.access_rows(),
        "providers": selectors.oidc_providers(),
    }
    return render(
        request, "portal/staff_access.html", context, status=400 if form.errors or oidc_form.errors else 200
    )


def _back() -> HttpResponse:
    return HttpResponseRedirect(reverse("portal_staff:access"))


@staff_page
@require_http_methods(["GET", "POST"])
def access(request: HttpRequest) -> HttpResponse:
    form = AccessForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            row = services.access_add(
                actor=request.user,
                customer=form.cleaned_data["customer"],
                domain=form.cleaned_data["domain"],
                email=form.cleaned_data["email"] or "",
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"{row} may now sign in to the portal.")
            return _back()
    return _page(request, form, OidcProviderForm())


@staff_page
@require_POST
def access_remove(request: HttpRequest, pk: int) -> HttpResponse:
    row = get_object_or_404(PortalAccess, pk=pk)
    services.access_remove(actor=request.user, access=row)
    messages.success(request, f"{row} may no longer sign in.")
    return _back()


@staff_page
@require_POST
def oidc_add(request: HttpRequest) -> HttpResponse:
    form = OidcProviderForm(request.POST)
    if form.is_valid():
        try:
            provider = services.oidc_provider_add(actor=request.user, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"{provider} added.")
            return _back()
    return _page(request, AccessForm(), form)


@staff_page
@require_POST
def oidc_remove(request: HttpRequest, pk: int) -> HttpResponse:
    provider = get_object_or_404(OidcProvider, pk=pk)
    services.oidc_provider_remove(actor=request.user, provider=provider)
    messages.success(request, f"{provider} removed.")
    return _back()
