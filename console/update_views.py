"""The console's update screens: post an update to an incident (several products at once),
resolve it, change its levels internally (no public post), correct a published update.

Thin views on the incidents services, like console/views.py (whose `console_view` gate
they share).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.template.defaultfilters import pluralize
from django.urls import reverse

from audiences import services as audience_services
from audiences.selectors import pages_showing_update
from console import selectors
from console.forms import level_field_name
from console.models import MessageTemplate
from console.update_forms import UpdateEditForm, UpdateForm
from console.views import _incident, _require, _template, _templates, _user, console_view
from core.admin import add_validation_errors
from incidents import services
from incidents.models import Incident, IncidentUpdate
from incidents.selectors import update_revisions

# --- Post an update (and resolve), or change levels internally ------------------------------


@console_view
def update(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    targets = list(selectors.console_incident(incident=incident).targets)
    resolving = request.GET.get("resolve") == "1"
    _require(request, "incident.resolve" if resolving else "incident.update")
    preview = ""
    if request.method == "POST":
        form = UpdateForm(request.POST, incident=incident, targets=targets, resolving=resolving)
        if form.is_valid() and "_preview" in request.POST:
            preview = form.cleaned_data["body"]
        elif form.is_valid():
            done = _save(request, incident, form)
            if done is not None:
                messages.success(request, done)
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
        form = UpdateForm(initial=initial, incident=incident, targets=targets, resolving=resolving)
    return render(
        request,
        "console/update.html",
        {
            "form": form,
            "incident": incident,
            "resolving": resolving,
            "preview": preview,
            "templates": _templates(MessageTemplate.Kind.UPDATE),
            "audience_pages": pages_showing_update(incident=incident),
        },
    )


# Service error keys that are no field of the form: the levels as a whole go on top of
# the form (their message names the products), the time of a level change is the
# update's time.
_SERVICE_FIELDS = {"levels": NON_FIELD_ERRORS, "level": NON_FIELD_ERRORS, "at": "display_at"}


def _put_errors(form: UpdateForm, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        exc = ValidationError(
            {_SERVICE_FIELDS.get(field, field): errors for field, errors in exc.error_dict.items()}
        )
    add_validation_errors(form, exc)


def _save(request: HttpRequest, incident: Incident, form: UpdateForm) -> str | None:
    """Post the update or change the levels; the message to show, or None (errors on the form)."""
    data = form.cleaned_data
    levels = [
        services.LevelSpec(product=product, location=location, level=level)
        for product, location, level in form.levels()
    ]
    impact: str | None = data["impact"] or None
    if impact is None and levels and not form.closing:
        # "Follow the levels": the worst level set raises the impact. Resolving with
        # nothing chosen keeps the worst impact the incident reached.
        impact = services.impact_for_levels(spec.level for spec in levels)
    try:
        if form.internal:
            changed = services.incident_levels_change(
                incident=incident,
                levels=levels,
                at=data["display_at"],
                impact=impact,
                note=data["note"],
                actor=_user(request),
            )
            return f"Changed {changed} level{pluralize(changed)} internally: nothing was posted and nobody was notified."
        # One transaction: the page subscribers' fan-out runs after the commit and must
        # find the update's words (docs/adr/0034-page-subscribers.md).
        with transaction.atomic():
            posted = services.incident_post_update_once(
                incident=incident,
                status=data["status"],
                body=data["body"],
                levels=levels,
                impact=impact,
                author=_user(request),
                display_at=data["display_at"],
                notify=bool(data["notify"]),
            )
            if data["audience_message"] or data["internal_note"]:
                audience_services.update_words_set(
                    actor=_user(request),
                    update=posted,
                    audience_message=data["audience_message"],
                    internal_note=data["internal_note"],
                )
    except ValidationError as exc:
        _put_errors(form, exc)
        if form.closing and "levels" in getattr(exc, "error_dict", {}):
            form.mark_open_levels()
        return None
    return f"Posted the update ({posted.get_status_display()})."


# --- Correct a published update ------------------------------------------------------------------


@console_view
def update_edit(request: HttpRequest, public_id: str, update_id: int) -> HttpResponse:
    incident = _incident(request, public_id)
    _require(request, "incident.update")
    entry = get_object_or_404(IncidentUpdate, pk=update_id, incident=incident)
    preview = ""
    if request.method == "POST":
        form = UpdateEditForm(request.POST)
        if form.is_valid() and "_preview" in request.POST:
            preview = form.cleaned_data["body"]
        elif form.is_valid():
            try:
                services.incident_update_edit(
                    update=entry, body=form.cleaned_data["body"], actor=_user(request)
                )
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(
                    request,
                    "Corrected the update; the previous text is in its history. Nobody was notified again.",
                )
                return HttpResponseRedirect(
                    reverse("console:incident", args=[incident.public_id]) + f"#update-{entry.pk}"
                )
    else:
        form = UpdateEditForm(initial={"body": entry.body})
    return render(
        request,
        "console/update_edit.html",
        {
            "form": form,
            "incident": incident,
            "entry": entry,
            "revisions": update_revisions(entry)[::-1],  # newest first
            "preview": preview,
        },
    )
