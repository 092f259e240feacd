"""The incident admin's inlines (windows, timeline, report, action items) and list filters."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.widgets import RelatedFieldWidgetWrapper
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from core.admin import (
    StackedInlineBase,
    TabularInlineBase,
)
from core.timezones import format_local
from incidents.admin.forms import (
    ImpactWindowInlineForm,
    IncidentReportInlineForm,
)
from incidents.markdown import stored_html
from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
    IncidentUpdate,
)
from incidents.selectors import update_backdated, update_revisions


class PlainRelatedInline(TabularInlineBase):
    """Inline rows whose product/owner pickers only pick: no edit/delete-the-product icons."""

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        widget = getattr(field, "widget", None)
        if isinstance(widget, RelatedFieldWidgetWrapper):
            widget.can_change_related = widget.can_delete_related = widget.can_view_related = False
        return field


class ImpactWindowInline(PlainRelatedInline):
    model = ImpactWindow
    form = ImpactWindowInlineForm
    fields = ["product", "location", "level", "started_at", "ended_at", "description"]
    autocomplete_fields = ["product", "location"]
    extra = 1
    verbose_name = "impact window"
    verbose_name_plural = "Impact windows (per product, optionally per location; empty end = ongoing)"


class IncidentUpdateInline(TabularInlineBase):
    """The timeline, read only: new entries come from “Post update”, so they notify; a
    text is corrected in the console, which keeps its history (never edited raw here)."""

    model = IncidentUpdate
    fields = [
        "display_at",
        "posted",
        "status",
        "rendered_body",
        "edits",
        "correction",
        "author",
        "notify_subscribers",
    ]
    readonly_fields = [
        "display_at",
        "posted",
        "status",
        "rendered_body",
        "edits",
        "correction",
        "author",
        "notify_subscribers",
    ]
    extra = 0
    can_delete = False
    verbose_name_plural = "Timeline (newest first; use “Post update” to add)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[IncidentUpdate]:
        return super().get_queryset(request).select_related("incident", "author")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Update")
    def rendered_body(self, obj: IncidentUpdate) -> SafeString:
        return mark_safe(stored_html(obj.body_html))  # noqa: S308 - sanitised by nh3 in stored_html

    @admin.display(description="Posted")
    def posted(self, obj: IncidentUpdate) -> str:
        """The real posting time, named when the shown time was set earlier."""
        if update_backdated(obj):
            return f"{format_local(obj.created_at)} (shown earlier)"
        return "as shown"

    @admin.display(description="Corrections")
    def edits(self, obj: IncidentUpdate) -> str:
        revisions = update_revisions(obj)
        if not revisions:
            return "none"
        return f"{len(revisions)}, last at {format_local(revisions[-1].edited_at)}"

    @admin.display(description="Correct")
    def correction(self, obj: IncidentUpdate) -> SafeString:
        # The console keeps the history and re-renders the Markdown; raw edits here would not.
        url = reverse("console:update_edit", args=[obj.incident.public_id, obj.pk])
        return format_html('<a href="{}">Correct in the console</a>', url)


class IncidentReportInline(StackedInlineBase):
    model = IncidentReport
    form = IncidentReportInlineForm
    fields = ["kind", "status", "summary", "root_cause", "remediation", "impact_description", "published_at"]
    readonly_fields = ["published_at"]
    can_delete = False
    extra = 1
    max_num = 1
    verbose_name = "incident report"
    verbose_name_plural = "Incident report (Markdown; “Save and preview report” shows it as published)"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        report = getattr(obj, "report", None) if obj is not None else None
        if report is not None and (report.is_published or report.is_approved):
            return ["status", "published_at"]
        return self.readonly_fields


class ActionItemInline(PlainRelatedInline):
    model = ActionItem
    fields = list(ActionItem.ROW_FIELDS)
    autocomplete_fields = ["owner"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    can_delete = False  # close an item as "won't do" instead; the record stays
    extra = 1


class ReportStateFilter(admin.SimpleListFilter):
    title = "incident report"
    parameter_name = "report"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("none", "No report"),
            *((value, str(label)) for value, label in IncidentReport.Status.choices),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "none":
            return queryset.filter(report__isnull=True)
        if value in IncidentReport.Status.values:
            return queryset.filter(report__status=value)
        return queryset


class OngoingFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("open", "Open"), ("closed", "Resolved or completed")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "open":
            return queryset.exclude(status__in=Incident.CLOSED_STATUSES)
        if self.value() == "closed":
            return queryset.filter(status__in=Incident.CLOSED_STATUSES)
        return queryset
