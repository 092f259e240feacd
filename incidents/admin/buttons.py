"""The incident buttons: post an update, resolve, preview the report. One service each."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone

from core.admin import (
    ModelAdminBase,
    actor,
    add_validation_errors,
)
from incidents import services
from incidents.admin.forms import (
    PostUpdateForm,
    ResolveForm,
)
from incidents.models import (
    Incident,
    IncidentReport,
    IncidentUpdate,
)
from incidents.selectors import incident_durations

# A second identical update within this time is a double submit, not news.
DUPLICATE_UPDATE_WINDOW = timedelta(minutes=10)


class IncidentButtonsMixin(ModelAdminBase):
    """Admin views of their own for the incident tools, mixed into IncidentAdmin."""

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        custom = [
            path(
                "<path:object_id>/post-update/",
                wrap(self.post_update_view),
                name="incidents_incident_post_update",
            ),
            path("<path:object_id>/resolve/", wrap(self.resolve_view), name="incidents_incident_resolve"),
            path(
                "<path:object_id>/report/",
                wrap(self.report_preview_view),
                name="incidents_incident_report_preview",
            ),
        ]
        return custom + super().get_urls()  # type: ignore[operator]

    def _incident_for_change(self, request: HttpRequest, object_id: str) -> Incident:
        incident = self.get_object(request, object_id)
        if incident is None:
            raise Http404("No such incident.")
        if not self.has_change_permission(request, incident):
            raise PermissionDenied
        return incident

    def _page(
        self, request: HttpRequest, incident: Incident, template: str, **context: Any
    ) -> TemplateResponse:
        return TemplateResponse(
            request,
            f"admin/incidents/incident/{template}",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "original": incident,
                "incident": incident,
                "change_url": reverse("admin:incidents_incident_change", args=[incident.pk]),
                **context,
            },
        )

    def post_update_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        incident = self._incident_for_change(request, object_id)
        preview: str | None = None
        if request.method == "POST":
            form = PostUpdateForm(request.POST, incident=incident)
            if form.is_valid() and "_preview" in request.POST:
                preview = form.cleaned_data["body"]
            elif form.is_valid():
                try:
                    update = self._post_update_once(request, incident, form.cleaned_data)
                except ValidationError as exc:
                    add_validation_errors(form, exc)
                else:
                    self.log_change(request, incident, f"Posted update: {update.get_status_display()}")
                    self.message_user(request, f"Posted the update ({update.get_status_display()}).")
                    return HttpResponseRedirect(
                        reverse("admin:incidents_incident_change", args=[incident.pk])
                    )
        else:
            form = PostUpdateForm(incident=incident)
        return self._page(
            request,
            incident,
            "post_update.html",
            title=f"Post an update: {incident}",
            form=form,
            preview=preview,
        )

    def _post_update_once(
        self, request: HttpRequest, incident: Incident, data: dict[str, Any]
    ) -> IncidentUpdate:
        """Post the update unless the very same one was just posted (a double submit)."""
        with transaction.atomic():
            # Row lock: a second submit waits here until the first has committed, then
            # sees its update and is refused.
            locked = Incident.objects.select_for_update().get(pk=incident.pk)
            latest = locked.updates.order_by("-created_at", "-id").first()
            if (
                latest is not None
                and latest.status == data["status"]
                and latest.body == data["body"]
                and latest.created_at >= timezone.now() - DUPLICATE_UPDATE_WINDOW
            ):
                raise ValidationError(
                    f"This update was already posted at {latest.created_at:%H:%M:%S} UTC; "
                    "it was not posted a second time."
                )
            return services.incident_post_update(
                incident=locked,
                status=data["status"],
                body=data["body"],
                display_at=data.get("display_at"),
                notify=bool(data.get("notify")),
                author=actor(request),
            )

    def resolve_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        incident = self._incident_for_change(request, object_id)
        change_url = reverse("admin:incidents_incident_change", args=[incident.pk])
        if request.method != "POST" and incident.is_closed:
            self.message_user(request, "This incident is already resolved.", messages.WARNING)
            return HttpResponseRedirect(change_url)
        if request.method == "POST":
            form = ResolveForm(request.POST)
            if form.is_valid():
                try:
                    services.incident_resolve(
                        incident=incident,
                        body=form.cleaned_data["body"],
                        resolved_at=form.cleaned_data.get("resolved_at"),
                        notify=bool(form.cleaned_data.get("notify")),
                        author=actor(request),
                    )
                except ValidationError as exc:
                    add_validation_errors(form, exc)
                else:
                    self.log_change(request, incident, "Resolved")
                    self.message_user(request, "Resolved; its open impact windows are closed.")
                    return HttpResponseRedirect(change_url)
        else:
            form = ResolveForm()
        open_windows = [w for w in incident.windows.all() if w.ended_at is None]
        return self._page(
            request,
            incident,
            "resolve.html",
            title=f"Resolve: {incident}",
            form=form,
            open_windows=open_windows,
        )

    def report_preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        incident = self._incident_for_change(request, object_id)
        errors: list[str] = []
        if request.method == "POST":
            try:
                services.report_publish(incident=incident, actor=actor(request))
            except ValidationError as exc:
                errors = exc.messages
            else:
                self.log_change(request, incident, "Published the incident report")
                self.message_user(
                    request, "Published the incident report; the incident is now in postmortem."
                )
                return HttpResponseRedirect(reverse("admin:incidents_incident_change", args=[incident.pk]))
            incident.refresh_from_db()
        report = IncidentReport.objects.filter(incident=incident).first()
        windows = list(incident.windows.all())
        return self._page(
            request,
            incident,
            "report_preview.html",
            title=f"Incident report preview: {incident}",
            report=report,
            windows=windows,
            durations=incident_durations(incident=incident, windows=windows),
            updates=list(incident.updates.select_related("author").order_by("-display_at", "-id")),
            action_items=list(incident.action_items.filter(is_public=True)),
            errors=errors,
        )
