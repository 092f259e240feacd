"""The console's Edit incident screen: title, times, summary and internal notes through
`incidents.services.incident_edit`; a refused change is shown on the form and saves
nothing (docs/console.md)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from console.edit_forms import IncidentEditForm
from console.views import _incident, _require, _user, console_view
from core.admin import add_validation_errors
from incidents import services


@console_view
def incident_edit(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    _require(request, "incident.edit")
    back = reverse("console:incident", args=[incident.public_id])
    preview = ""
    if request.method != "POST":
        form = IncidentEditForm(incident=incident)
    else:
        form = IncidentEditForm(request.POST, incident=incident)
        if "_preview" in request.POST:
            preview = request.POST.get("summary", "")
        elif form.is_valid():
            changes = form.changes()
            if not changes:
                messages.info(request, "Nothing was changed.")
                return HttpResponseRedirect(back)
            try:
                services.incident_edit(incident=incident, changes=changes, actor=_user(request))
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, "Saved the changes to the incident.")
                return HttpResponseRedirect(back)
    return render(
        request, "console/incident_edit.html", {"form": form, "incident": incident, "preview": preview}
    )
