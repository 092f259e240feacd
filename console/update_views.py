"""The console's update screen: post an update to an incident, or resolve it.

Thin views on the incidents services, like console/views.py (whose `console_view` gate
they share).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from console import selectors
from console.forms import level_field_name
from console.models import MessageTemplate
from console.update_forms import UpdateForm
from console.views import _incident, _require, _template, _templates, _user, console_view
from core.admin import add_validation_errors
from incidents import services
from incidents.models import Incident, IncidentUpdate

# --- Post an update (and resolve) -------------------------------------------------------------


@console_view
def update(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    targets = list(selectors.console_incident(incident=incident).targets)
    resolving = request.GET.get("resolve") == "1"
    _require(request, "incident.resolve" if resolving else "incident.update")
    preview = ""
    if request.method == "POST":
        form = UpdateForm(request.POST, incident=incident, targets=targets)
        if form.is_valid() and "_preview" in request.POST:
            preview = form.cleaned_data["body"]
        elif form.is_valid():
            posted = _post_update(request, incident, form)
            if posted is not None:
                messages.success(request, f"Posted the update ({posted.get_status_display()}).")
                return HttpResponseRedirect(reverse("console:incident", args=[incident.public_id]))
    else:
        closing = Incident.Status.COMPLETED if incident.is_maintenance else Incident.Status.RESOLVED
        initial: dict[str, Any] = {"status": closing if resolving else incident.status}
        template = _template(request, MessageTemplate.Kind.UPDATE)
        if template is not None:
            initial["body"] = template.body
            if template.status:
                initial["status"] = template.status
        if resolving:
            # Resolving sets everything operational; the form says so before it is sent.
            initial.update({level_field_name(t.product, t.location): services.OPERATIONAL for t in targets})
        form = UpdateForm(initial=initial, incident=incident, targets=targets)
    return render(
        request,
        "console/update.html",
        {
            "form": form,
            "incident": incident,
            "resolving": resolving,
            "preview": preview,
            "templates": _templates(MessageTemplate.Kind.UPDATE),
        },
    )


def _post_update(request: HttpRequest, incident: Incident, form: UpdateForm) -> IncidentUpdate | None:
    data = form.cleaned_data
    levels = [
        services.LevelSpec(product=product, location=location, level=level)
        for product, location, level in form.levels()
    ]
    # "Follow the levels": the worst level posted sets the impact the banner shows.
    impact: str | None = data["impact"] or None
    if impact is None and levels:
        impact = services.impact_for_levels(spec.level for spec in levels)
    try:
        return services.incident_post_update_once(
            incident=incident,
            status=data["status"],
            body=data["body"],
            levels=levels,
            impact=impact,
            author=_user(request),
            display_at=data["display_at"],
            notify=bool(data["notify"]),
        )
    except ValidationError as exc:
        add_validation_errors(form, exc)
        return None
