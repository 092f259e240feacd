"""The timeline editor of an incident's report: the automatic rows next to the staff
entries, a form to add or edit an entry, and the incident's links. Thin: parse the form,
call postmortems.services, redirect (a refused write shows the form again with the
rule's message; a role that may not write gets the console's 403 page)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from console.timeline_forms import IncidentLinkForm, TimelineEntryForm
from console.views import _incident, _user, console_view
from core.admin import add_validation_errors
from incidents.models import Incident
from postmortems import selectors, services
from postmortems.models import IncidentLink, TimelineEntry


def _entry(incident: Incident, raw: object) -> TimelineEntry:
    if not str(raw or "").isdigit():
        raise Http404("No such timeline entry.")
    entry = TimelineEntry.objects.filter(incident=incident, pk=int(str(raw))).first()
    if entry is None:
        raise Http404("No such timeline entry.")
    return entry


def _here(incident: Incident) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("console:timeline", args=[incident.public_id]))


@console_view
def timeline(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    entry_form = TimelineEntryForm()
    link_form = IncidentLinkForm()
    status = 200
    if request.method == "POST":
        done = _post(request, incident)
        if isinstance(done, HttpResponse):
            return done
        entry_form, link_form = done
        status = 400
    elif "edit" in request.GET:
        entry = _entry(incident, request.GET["edit"])
        entry_form = TimelineEntryForm(
            initial={"entry_id": entry.pk, **{f: getattr(entry, f) for f in TimelineEntry.FIELDS}}
        )
    return render(
        request,
        "console/timeline.html",
        {
            "incident": incident,
            "timeline": selectors.incident_timeline(incident=incident, public=False),
            "links": selectors.incident_links(incident=incident, public=False),
            "entry_form": entry_form,
            "link_form": link_form,
        },
        status=status,
    )


def _post(request: HttpRequest, incident: Incident) -> HttpResponse | tuple[Any, Any]:
    user = _user(request)
    entry_form, link_form = TimelineEntryForm(), IncidentLinkForm()
    if "_delete" in request.POST:
        services.timeline_entry_delete(entry=_entry(incident, request.POST["_delete"]), actor=user)
        messages.success(request, "Deleted the timeline entry.")
        return _here(incident)
    if "_unlink" in request.POST:
        raw = request.POST["_unlink"]
        link = IncidentLink.objects.filter(
            pk=int(raw) if raw.isdigit() else 0, from_incident=incident
        ).first()
        link = (
            link
            or IncidentLink.objects.filter(pk=int(raw) if raw.isdigit() else 0, to_incident=incident).first()
        )
        if link is None:
            raise Http404("No such link.")
        services.incident_link_delete(link=link, actor=user)
        messages.success(request, "Removed the link.")
        return _here(incident)
    if "_link" in request.POST:
        link_form = IncidentLinkForm(request.POST)
        if link_form.is_valid():
            other = Incident.objects.filter(public_id=link_form.cleaned_data["other"].strip()).first()
            if other is None:
                link_form.add_error("other", "No incident has this id.")
            else:
                try:
                    services.incident_link_create(
                        from_incident=incident,
                        to_incident=other,
                        kind=link_form.cleaned_data["kind"],
                        actor=user,
                    )
                except ValidationError as exc:
                    add_validation_errors(link_form, _on_other(exc))
                else:
                    messages.success(request, "Linked the incidents.")
                    return _here(incident)
        return entry_form, link_form
    entry_form = TimelineEntryForm(request.POST)
    if entry_form.is_valid():
        data = dict(entry_form.cleaned_data)
        entry_id = data.pop("entry_id")
        try:
            if entry_id:
                services.timeline_entry_edit(entry=_entry(incident, entry_id), changes=data, actor=user)
            else:
                services.timeline_entry_create(incident=incident, actor=user, **data)
        except ValidationError as exc:
            add_validation_errors(entry_form, exc)
        else:
            messages.success(request, "Saved the timeline entry.")
            return _here(incident)
    return entry_form, link_form


def _on_other(exc: ValidationError) -> ValidationError:
    """The service names the link's target `to_incident`; the form calls it `other`."""
    if hasattr(exc, "error_dict"):
        return ValidationError({("other" if k == "to_incident" else k): v for k, v in exc.error_dict.items()})
    return exc
