"""Action items across incidents."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from core.admin import ServiceModelAdmin, actor, adopt, call_service
from incidents import services
from incidents.models import ActionItem, Incident


class ActionItemAdminForm(forms.ModelForm):
    # Declared: the model's default form field would assume "http" (formfield_overrides
    # applies to the admin's copy of the form, not to this class).
    tracker_url = forms.URLField(label="Tracker URL", required=False, max_length=200, assume_scheme="https")
    # Not a field of the item: the service keeps it in the item's history (postmortems).
    reason = forms.CharField(
        label="Reason for won't do",
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Required when the status becomes won't do; shown on the public report for public items.",
    )

    class Meta:
        model = ActionItem
        fields = ActionItem.FIELDS


def save_action_item_form(
    form: Any, *, incident: Incident, request: HttpRequest, context: str = ""
) -> ActionItem | None:
    """Create or edit one action item from an admin form (the page or the incident inline)."""
    data = form.cleaned_data
    if form.instance.pk is None:
        fields = {name: data[name] for name in ActionItem.FIELDS if name in data}
        return call_service(
            context,
            services.action_item_create,
            incident=incident,
            **fields,
            actor=actor(request),
            reason=data.get("reason") or "",
        )  # type: ignore[no-any-return]
    changes = {name: data[name] for name in form.changed_data if name in ActionItem.FIELDS}
    if not changes:
        return None
    return call_service(  # type: ignore[no-any-return]
        context,
        services.action_item_edit,
        item=form.instance,
        changes=changes,
        actor=actor(request),
        reason=data.get("reason") or "",
    )


class OverdueFilter(admin.SimpleListFilter):
    title = "due"
    parameter_name = "due"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("overdue", "Overdue"), ("week", "Due within 7 days"), ("none", "No due date")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        today = timezone.localdate()
        open_items = queryset.filter(status__in=ActionItem.OPEN_STATUSES)
        if self.value() == "overdue":
            return open_items.filter(due_date__lt=today)
        if self.value() == "week":
            return open_items.filter(due_date__gte=today, due_date__lte=today + timedelta(days=7))
        if self.value() == "none":
            return queryset.filter(due_date__isnull=True)
        return queryset


@admin.register(ActionItem)
class ActionItemAdmin(ServiceModelAdmin):
    list_display = [
        "title",
        "incident_link",
        "type",
        "priority",
        "status",
        "owner",
        "due_date",
        "overdue",
        "is_public",
    ]
    list_filter = [
        "status",
        "priority",
        "type",
        OverdueFilter,
        "is_public",
        ("owner", admin.RelatedOnlyFieldListFilter),
    ]
    list_select_related = ["incident", "owner"]
    search_fields = ["title", "description", "incident__title", "=incident__public_id"]
    autocomplete_fields = ["incident", "owner"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    date_hierarchy = "due_date"
    form = ActionItemAdminForm
    fields = ["incident", *ActionItem.FIELDS, "reason"]
    # No bulk "won't do": each dropped item needs its own reason (its page asks for it).
    actions = ["mark_in_progress", "mark_done"]

    @admin.display(description="Incident", ordering="incident__started_at")
    def incident_link(self, obj: ActionItem) -> str:
        url = reverse("admin:incidents_incident_change", args=[obj.incident_id])
        return format_html('<a href="{}">{}</a>', url, obj.incident.title)

    @admin.display(description="Overdue", boolean=True)
    def overdue(self, obj: ActionItem) -> bool:
        return bool(
            obj.due_date and obj.status in ActionItem.OPEN_STATUSES and obj.due_date < timezone.localdate()
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["incident"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: ActionItem, form: Any, change: bool) -> None:
        item = save_action_item_form(
            form, incident=form.cleaned_data.get("incident") or obj.incident, request=request
        )
        if item is not None:
            adopt(obj, item)

    def _mark(self, request: HttpRequest, queryset: QuerySet[ActionItem], status: str) -> None:
        count = 0
        for item in queryset:
            if item.status != status:
                services.action_item_edit(item=item, changes={"status": status}, actor=actor(request))
                count += 1
        self.message_user(request, f"Updated {count} action item(s).", messages.SUCCESS)

    @admin.action(description="Mark selected as in progress")
    def mark_in_progress(self, request: HttpRequest, queryset: QuerySet[ActionItem]) -> None:
        self._mark(request, queryset, ActionItem.Status.IN_PROGRESS)

    @admin.action(description="Mark selected as done")
    def mark_done(self, request: HttpRequest, queryset: QuerySet[ActionItem]) -> None:
        self._mark(request, queryset, ActionItem.Status.DONE)
