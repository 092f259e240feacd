"""The console page where Finance says who may sign in to the customer portal
(`portal.access`). English only, like the rest of the console."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core import roles
from portal import selectors, services
from portal.forms import AccessForm
from portal.models import PortalAccess


def _refused(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "console/403.html", {"message": message}, status=403)


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


@staff_member_required
@require_http_methods(["GET", "POST"])
def access(request: HttpRequest) -> HttpResponse:
    if not roles.allowed(request.user, "portal.access"):
        return _no_store(
            _refused(request, f"Your role does not allow you to {roles.ACTIONS['portal.access']}.")
        )
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
            return _no_store(HttpResponseRedirect(reverse("portal_staff:access")))
    context = {"form": form, "rows": selectors.access_rows()}
    return _no_store(render(request, "portal/staff_access.html", context, status=400 if form.errors else 200))


@staff_member_required
@require_POST
def access_remove(request: HttpRequest, pk: int) -> HttpResponse:
    row = get_object_or_404(PortalAccess, pk=pk)
    try:
        services.access_remove(actor=request.user, access=row)
    except PermissionDenied as refused:
        return _no_store(_refused(request, str(refused)))
    messages.success(request, f"{row} may no longer sign in.")
    return _no_store(HttpResponseRedirect(reverse("portal_staff:access")))
