"""The incident admin: file, edit and repair incidents. Posting updates, resolving and
publishing the report are the console's (docs/adr/0009-one-write-path.md); the change
page links to the incident's console page.

Filing is one `incident_declare` call with the windows typed in the inline, so an
incident never exists without the windows it was filed with.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Prefetch, QuerySet
from django.forms import ModelForm
from django.forms.formsets import BaseFormSet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

from core.admin import (
    ServiceModelAdmin,
    actor,
    call_service,
    record_formset,
)
from core.timezones import format_local
from incidents import services
from incidents.admin.action_items import save_action_item_form
from incidents.admin.forms import (
    IncidentAddForm,
    IncidentChangeForm,
)
from incidents.admin.inlines import (
    ActionItemInline,
    ImpactWindowInline,
    IncidentReportInline,
    IncidentUpdateInline,
    OngoingFilter,
    ReportStateFilter,
)
from incidents.intervals import format_duration
from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
)
from incidents.selectors import incident_durations, incident_notes

# --- Incidents -----------------------------------------------------------------------------


@admin.register(Incident)
class IncidentAdmin(ServiceModelAdmin):
    form = IncidentChangeForm
    add_form = IncidentAddForm
    change_form_template = "admin/incidents/incident/change_form.html"
    list_display = [
        "title",
        "public_id",
        "kind",
        "status",
        "impact",
        "started_at",
        "resolved_at",
        "duration",
        "products",
        "is_public",
        "report_state",
    ]
    list_filter = [
        OngoingFilter,
        "status",
        "impact",
        "kind",
        "is_public",
        ("windows__product", admin.RelatedOnlyFieldListFilter),
        ("windows__location", admin.RelatedOnlyFieldListFilter),
        ReportStateFilter,
        "started_at",
    ]
    date_hierarchy = "started_at"
    search_fields = ["title", "=public_id", "summary", "updates__body"]
    list_select_related = ["report"]
    list_per_page = 50
    autocomplete_fields = ["recurrence_of"]
    save_on_top = True

    add_fieldsets = [
        (None, {"fields": ["title", "kind", "status", "impact", "is_public"]}),
        ("Times", {"fields": ["started_at", "detected_at", "scheduled_for", "scheduled_until"]}),
        ("What the public reads", {"fields": ["summary", "body", "notify"]}),
        ("Staff only", {"fields": ["recurrence_of", "internal_notes"], "classes": ["collapse"]}),
    ]
    change_fieldsets = [
        (None, {"fields": ["title", "public_id", "kind", "status", "impact", "is_public"]}),
        (
            "Times",
            {
                "fields": [
                    "started_at",
                    "detected_at",
                    "mitigated_at",
                    "resolved_at",
                    "scheduled_for",
                    "scheduled_until",
                ]
            },
        ),
        ("What the public reads", {"fields": ["summary"]}),
        (
            "Staff only",
            {"fields": ["recurrence_of", "internal_notes", "staff_notes", "created_by", "created_at"]},
        ),
    ]

    # --- Pages ---------------------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.change_fieldsets if obj is not None else self.add_fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        return ["public_id", "kind", "status", "resolved_at", "staff_notes", "created_by", "created_at"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[ModelForm[Any]]:
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, change, **kwargs)

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[Any]:
        if obj is None:
            # Filing: the incident and where it hurts. The rest comes once it exists.
            return [ImpactWindowInline]
        return [ImpactWindowInline, IncidentUpdateInline, IncidentReportInline, ActionItemInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Incident]:
        windows = ImpactWindow.objects.select_related("product", "location").order_by("started_at", "id")
        return super().get_queryset(request).prefetch_related(Prefetch("windows", queryset=windows))

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        extra_context = {**(extra_context or {}), "console_url": self._console_url(object_id)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _console_url(self, object_id: str) -> str | None:
        """Updates, resolving and the report are written on the incident's console page."""
        try:
            incident = Incident.objects.get(pk=object_id)
        except (Incident.DoesNotExist, ValueError, ValidationError):
            return None
        return reverse("console:incident", args=[incident.public_id])

    # --- Columns -------------------------------------------------------------------------

    @admin.display(description="Duration")
    def duration(self, obj: Incident) -> str:
        durations = incident_durations(incident=obj, windows=obj.windows.all())
        text = format_duration(durations.total)
        return f"{text} (ongoing)" if durations.ongoing else text

    @admin.display(description="Products")
    def products(self, obj: Incident) -> str:
        names: dict[int, str] = {}
        for window in obj.windows.all():
            names.setdefault(window.product_id, window.product.name)
        return ", ".join(names.values()) or "—"

    @admin.display(description="Notes (level changes without a public update)")
    def staff_notes(self, obj: Incident) -> SafeString | str:
        notes = incident_notes(obj)
        if not notes:
            return "none"
        return format_html_join(
            mark_safe("<br>"),
            "{}: {} ({})",
            ((format_local(n.at), n.body, n.author or "system") for n in notes),
        )

    @admin.display(description="Report")
    def report_state(self, obj: Incident) -> str:
        report = getattr(obj, "report", None)
        return report.get_status_display() if report is not None else "—"

    # --- Saving through the services -----------------------------------------------------

    def save_model(self, request: HttpRequest, obj: Incident, form: Any, change: bool) -> None:
        if not change:
            return  # filed in save_related, in one call with the windows of the inline
        changes = {
            name: form.cleaned_data[name]
            for name in form.changed_data
            if name in services.INCIDENT_EDITABLE_FIELDS
        }
        if changes:
            call_service("", services.incident_edit, incident=obj, changes=changes, actor=actor(request))

    def save_related(self, request: HttpRequest, form: Any, formsets: list[Any], change: bool) -> None:
        if not change:
            self._file_incident(request, form, formsets)
            return
        for formset in formsets:
            self.save_formset(request, form, formset, change)

    def _file_incident(self, request: HttpRequest, form: Any, formsets: list[Any]) -> None:
        specs = [
            services.WindowSpec(
                product=data["product"],
                location=data.get("location"),
                level=data["level"],
                started_at=data["started_at"],
                ended_at=data.get("ended_at"),
                description=data.get("description", ""),
            )
            for formset in formsets
            if formset.model is ImpactWindow
            for data in _filled_forms(formset)
        ]
        data = form.cleaned_data
        incident = call_service(
            "",
            services.incident_declare,
            title=data["title"],
            kind=data["kind"],
            status=data.get("status") or None,
            impact=data["impact"],
            started_at=data.get("started_at"),
            detected_at=data.get("detected_at"),
            scheduled_for=data.get("scheduled_for"),
            scheduled_until=data.get("scheduled_until"),
            summary=data.get("summary", ""),
            body=data.get("body", ""),
            notify=bool(data.get("notify")),
            is_public=bool(data.get("is_public")),
            recurrence_of=data.get("recurrence_of"),
            internal_notes=data.get("internal_notes", ""),
            windows=specs,
            created_by=actor(request),
        )
        # The admin goes on with form.instance (log entry, redirect): make it the new row.
        obj = form.instance
        for field in Incident._meta.concrete_fields:
            setattr(obj, field.attname, getattr(incident, field.attname))
        obj._state.adding = False
        obj._state.db = incident._state.db
        windows = list(incident.windows.all())
        for formset in formsets:
            record_formset(
                formset, new=windows if formset.model is ImpactWindow else [], changed=[], deleted=[]
            )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        incident: Incident = form.instance
        if formset.model is ImpactWindow:
            self._save_windows(incident, formset, request)
        elif formset.model is IncidentReport:
            self._save_report(incident, formset, request)
        elif formset.model is ActionItem:
            self._save_action_items(incident, formset, request)
        else:
            record_formset(formset, new=[], changed=[], deleted=[])  # the timeline is read only

    def _save_windows(self, incident: Incident, formset: Any, request: HttpRequest) -> None:
        new, changed, deleted = [], [], []
        deleting = set(formset.deleted_forms) if formset.can_delete else set()
        for number, window_form in enumerate(formset.forms, start=1):
            context = f"Impact window {number}"
            if window_form in deleting:
                if window_form.instance.pk is not None:
                    call_service(
                        context,
                        services.impact_window_delete,
                        window=window_form.instance,
                        actor=actor(request),
                    )
                    deleted.append(window_form.instance)
                continue
            if not window_form.has_changed():
                continue
            data = window_form.cleaned_data
            if window_form.instance.pk is None or window_form in formset.extra_forms:
                new.append(
                    call_service(
                        context,
                        services.impact_window_add,
                        incident=incident,
                        product=data["product"],
                        location=data.get("location"),
                        level=data["level"],
                        started_at=data["started_at"],
                        ended_at=data.get("ended_at"),
                        description=data.get("description", ""),
                        actor=actor(request),
                    )
                )
            elif (
                window_form.changed_data == ["ended_at"]
                and window_form.initial.get("ended_at") is None
                and data.get("ended_at") is not None
            ):
                # Only an end typed into an open window: that is closing it.
                window = call_service(
                    context,
                    services.impact_window_close,
                    window=window_form.instance,
                    ended_at=data["ended_at"],
                    actor=actor(request),
                )
                changed.append((window, window_form.changed_data))
            else:
                window = call_service(
                    context,
                    services.impact_window_edit,
                    window=window_form.instance,
                    product=data["product"],
                    location=data.get("location"),
                    level=data["level"],
                    started_at=data["started_at"],
                    ended_at=data.get("ended_at"),
                    description=data.get("description", ""),
                    actor=actor(request),
                )
                changed.append((window, window_form.changed_data))
        record_formset(formset, new=new, changed=changed, deleted=deleted)

    def _save_report(self, incident: Incident, formset: Any, request: HttpRequest) -> None:
        new, changed = [], []
        for report_form in formset.forms:
            if not report_form.has_changed():
                continue
            data = report_form.cleaned_data
            existed = report_form.instance.pk is not None
            report = call_service(
                "Incident report",
                services.report_save,
                incident=incident,
                kind=data["kind"],
                summary=data.get("summary", ""),
                root_cause=data.get("root_cause", ""),
                remediation=data.get("remediation", ""),
                impact_description=data.get("impact_description", ""),
                actor=actor(request),
            )
            status = data.get("status")
            if status and status != report.status:
                report = call_service(
                    "Incident report",
                    services.report_set_status,
                    incident=incident,
                    status=status,
                    actor=actor(request),
                )
            if existed:
                changed.append((report, report_form.changed_data))
            else:
                new.append(report)
        record_formset(formset, new=new, changed=changed, deleted=[])

    def _save_action_items(self, incident: Incident, formset: Any, request: HttpRequest) -> None:
        new, changed = [], []
        for number, item_form in enumerate(formset.forms, start=1):
            if not item_form.has_changed():
                continue
            is_new = item_form.instance.pk is None or item_form in formset.extra_forms
            item = save_action_item_form(
                item_form, incident=incident, request=request, context=f"Action item {number}"
            )
            if is_new:
                new.append(item)
            elif item is not None:
                changed.append((item, item_form.changed_data))
        record_formset(formset, new=new, changed=changed, deleted=[])

    def delete_model(self, request: HttpRequest, obj: Incident) -> None:
        services.incident_delete(incident=obj, actor=actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Incident]) -> None:
        for incident in queryset:
            services.incident_delete(incident=incident, actor=actor(request))


def _filled_forms(formset: BaseFormSet) -> list[dict[str, Any]]:
    """The cleaned data of the rows a person actually filled in (not blank, not deleted)."""
    return [
        f.cleaned_data
        for f in formset.forms
        if f.has_changed() and not f.cleaned_data.get("DELETE") and f.cleaned_data
    ]
