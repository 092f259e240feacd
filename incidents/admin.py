"""The staff side: the Django admin, made good enough to run a real incident from it.

Every write to incidents goes through `incidents.services`, so the domain rules run
whatever page a person uses. The admin's own save path is bent to that in two places:

- `save_model` / `save_related` / `save_formset` call the services instead of saving
  the forms. Filing a new incident is one `incident_open` call with the windows typed in
  the inline, so an incident never exists without the windows it was filed with.
- A service may still refuse what the forms accepted. It raises `ValidationError`; we
  turn that into `ServiceRejected`, which unwinds through the admin's own
  `transaction.atomic` (so nothing of the request is saved), and then render the same
  POST again with the service's messages added to the form.

The incident buttons (post update, resolve, preview and publish the report) are admin
views of their own; each calls one service.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.widgets import RelatedFieldWidgetWrapper
from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import models, transaction
from django.db.models import Case, OuterRef, Prefetch, Q, QuerySet, Subquery, Value, When
from django.forms import BaseForm, ModelForm
from django.forms.formsets import BaseFormSet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from edge import version as public_cache
from incidents import services
from incidents.admin_forms import (
    ImpactWindowInlineForm,
    IncidentAddForm,
    IncidentChangeForm,
    IncidentReportInlineForm,
    LocationAdminForm,
    PostUpdateForm,
    ResolveForm,
)
from incidents.intervals import format_duration
from incidents.markdown import render_markdown
from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
    IncidentUpdate,
    Location,
    Product,
    ProductGroup,
)
from incidents.selectors import LEVEL_SEVERITY, OPERATIONAL, PRODUCT_STATUS_LABELS, incident_durations

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[Any]
    TabularInlineBase = admin.TabularInline[Any, Any]
    StackedInlineBase = admin.StackedInline[Any, Any]
else:
    ModelAdminBase = admin.ModelAdmin
    TabularInlineBase = admin.TabularInline
    StackedInlineBase = admin.StackedInline

# A second identical update within this time is a double submit, not news.
DUPLICATE_UPDATE_WINDOW = timedelta(minutes=10)
# The same title filed twice by the same person this quickly is a double submit.
DUPLICATE_FILING_WINDOW = timedelta(minutes=2)
_REJECTION_ATTR = "_service_rejection"


# --- Service errors back onto forms ---------------------------------------------------------


class ServiceRejected(Exception):
    """A service refused a save; carries its error and which part of the page it concerns."""

    def __init__(self, error: ValidationError, *, context: str = "") -> None:
        super().__init__(str(error))
        self.error = error
        self.context = context


def add_validation_errors(form: BaseForm, error: ValidationError, *, context: str = "") -> None:
    """Put a service's errors on the form: on the field when the form has it, else on top."""
    prefix = f"{context}: " if context else ""
    if hasattr(error, "error_dict"):
        for field, errors in error.error_dict.items():
            texts = [text for e in errors for text in e.messages]
            if not context and field in form.fields:
                form.add_error(field, texts)
            elif field == NON_FIELD_ERRORS:
                form.add_error(None, [prefix + text for text in texts])
            else:
                label = field.replace("_", " ")
                form.add_error(None, [f"{prefix}{label}: {text}" for text in texts])
    else:
        form.add_error(None, [prefix + text for text in error.messages])


def _with_rejection(form_class: type[ModelForm[Any]], rejected: ServiceRejected) -> type[ModelForm[Any]]:
    class RejectedForm(form_class):  # type: ignore[valid-type,misc]
        def clean(self) -> Any:
            cleaned = super().clean()
            add_validation_errors(self, rejected.error, context=rejected.context)
            return cleaned

    RejectedForm.__name__ = form_class.__name__
    return RejectedForm


def _record_formset(formset: Any, *, new: list[Any], changed: list[Any], deleted: list[Any]) -> None:
    # The admin's change message reads these, which `formset.save()` would have set.
    formset.new_objects = new
    formset.changed_objects = changed
    formset.deleted_objects = deleted


class ServiceModelAdmin(ModelAdminBase):
    """A ModelAdmin whose saves call services and whose refusals show on the form."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ServiceRejected as rejected:
            # The admin ran the save inside transaction.atomic, which the exception has
            # rolled back. Bind the same POST again; the form now carries the error.
            setattr(request, _REJECTION_ATTR, rejected)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[ModelForm[Any]]:
        form_class = super().get_form(request, obj, change, **kwargs)
        rejected = getattr(request, _REJECTION_ATTR, None)
        return _with_rejection(form_class, rejected) if rejected else form_class


def _actor(request: HttpRequest) -> Any:
    """The signed-in staff member (the admin views only run for authenticated staff)."""
    return request.user


def _call(context: str, func: Any, /, **kwargs: Any) -> Any:
    try:
        return func(**kwargs)
    except ValidationError as exc:
        raise ServiceRejected(exc, context=context) from exc


# --- Catalogue: groups, products, locations -------------------------------------------------


class CatalogueAdmin(ModelAdminBase):
    """Products and locations are configuration; changing them changes the public page."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        public_cache.public_state_changed()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        public_cache.public_state_changed()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)
        public_cache.public_state_changed()


class ProductInline(TabularInlineBase):
    model = Product
    fields = ["name", "slug", "position", "is_public"]
    prepopulated_fields = {"slug": ("name",)}
    extra = 0
    show_change_link = True


@admin.register(ProductGroup)
class ProductGroupAdmin(CatalogueAdmin):
    list_display = ["name", "position", "product_count"]
    list_editable = ["position"]
    search_fields = ["name"]
    inlines = [ProductInline]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        public_cache.public_state_changed()

    @admin.display(description="Products")
    def product_count(self, obj: ProductGroup) -> int:
        return obj.products.count()


def _current_level() -> Subquery:
    """The worst level among a product's windows open now, as one correlated subquery."""
    now = timezone.now()
    severity = Case(
        *[
            When(level=level, then=Value(rank))
            for level, rank in LEVEL_SEVERITY.items()
            if level != OPERATIONAL
        ],
        default=Value(0),
    )
    open_now = (
        ImpactWindow.objects.filter(product=OuterRef("pk"), started_at__lte=now)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=now))
        .annotate(severity=severity)
        .order_by("-severity")
        .values("level")[:1]
    )
    return Subquery(open_now)


@admin.register(Product)
class ProductAdmin(CatalogueAdmin):
    list_display = ["name", "group", "slug", "position", "is_public", "current_status"]
    list_filter = ["group", "is_public"]
    list_select_related = ["group"]
    search_fields = ["name", "slug", "description"]
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ["public_id"]
    fields = ["name", "slug", "group", "position", "is_public", "description", "public_id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Product]:
        return super().get_queryset(request).annotate(current_level=_current_level())

    @admin.display(description="Current status")
    def current_status(self, obj: Product) -> str:
        level = getattr(obj, "current_level", None) or OPERATIONAL
        return PRODUCT_STATUS_LABELS.get(level, level)


@admin.register(Location)
class LocationAdmin(CatalogueAdmin):
    form = LocationAdminForm
    list_display = ["path", "name", "display_name", "kind", "parent"]
    list_filter = ["kind", ("parent", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["parent__parent"]
    search_fields = ["name", "display_name"]
    ordering = ["name"]
    autocomplete_fields = ["parent"]

    @admin.display(description="Location", ordering="name")
    def path(self, obj: Location) -> str:
        # Shown as the tree path so zones read next to their region: us-central1 / us-central1-b.
        parts = [obj.name]
        node = obj.parent
        while node is not None and len(parts) < 5:
            parts.append(node.name)
            node = node.parent
        return " / ".join(reversed(parts))


# --- Incidents -----------------------------------------------------------------------------


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
    """The timeline, read only: new entries come from “Post update”, so they notify."""

    model = IncidentUpdate
    fields = ["display_at", "status", "rendered_body", "author", "notify_subscribers"]
    readonly_fields = ["display_at", "status", "rendered_body", "author", "notify_subscribers"]
    extra = 0
    can_delete = False
    verbose_name_plural = "Timeline (newest first; use “Post update” to add)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Update")
    def rendered_body(self, obj: IncidentUpdate) -> SafeString:
        return mark_safe(render_markdown(obj.body))  # noqa: S308 - sanitised by nh3 in render_markdown


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
        if report is not None and report.is_published:
            return ["status", "published_at"]
        return self.readonly_fields


class ActionItemInline(PlainRelatedInline):
    model = ActionItem
    fields = ["title", "type", "priority", "status", "owner", "due_date", "tracker_url", "is_public"]
    autocomplete_fields = ["owner"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    can_delete = False  # close an item as "won't do" instead; the record stays
    extra = 1


class ReportStateFilter(admin.SimpleListFilter):
    title = "incident report"
    parameter_name = "report"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("none", "No report"), *IncidentReport.Status.choices]

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
    actions = ["resolve_selected", "publish_reports"]
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
        ("Staff only", {"fields": ["recurrence_of", "internal_notes", "created_by", "created_at"]}),
    ]

    # --- Pages ---------------------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.change_fieldsets if obj is not None else self.add_fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        return ["public_id", "kind", "status", "resolved_at", "created_by", "created_at"]

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
        extra_context = {**(extra_context or {}), "incident_tools": self._tools(object_id)}
        return super().change_view(request, object_id, form_url, extra_context)

    def _tools(self, object_id: str) -> list[tuple[str, str]]:
        try:
            incident = Incident.objects.get(pk=object_id)
        except (Incident.DoesNotExist, ValueError, ValidationError):
            return []
        tools = [("Post update", self._url("post_update", incident))]
        if not incident.is_closed:
            tools.append(
                ("Resolve" if not incident.is_maintenance else "Complete", self._url("resolve", incident))
            )
        tools.append(("Preview & publish report", self._url("report_preview", incident)))
        return tools

    def _url(self, name: str, incident: Incident) -> str:
        return reverse(f"admin:incidents_incident_{name}", args=[incident.pk])

    def response_change(self, request: HttpRequest, obj: Incident) -> HttpResponse:
        if "_preview_report" in request.POST:
            self.message_user(request, "Saved. This is the report as it will be published.", messages.SUCCESS)
            return HttpResponseRedirect(self._url("report_preview", obj))
        return super().response_change(request, obj)

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
            _call("", services.incident_edit, incident=obj, changes=changes)

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
        self._refuse_double_filing(request, data)
        incident = _call(
            "",
            services.incident_open,
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
            created_by=_actor(request),
        )
        # The admin goes on with form.instance (log entry, redirect): make it the new row.
        obj = form.instance
        for field in Incident._meta.concrete_fields:
            setattr(obj, field.attname, getattr(incident, field.attname))
        obj._state.adding = False
        obj._state.db = incident._state.db
        windows = list(incident.windows.all())
        for formset in formsets:
            _record_formset(
                formset, new=windows if formset.model is ImpactWindow else [], changed=[], deleted=[]
            )

    def _refuse_double_filing(self, request: HttpRequest, data: dict[str, Any]) -> None:
        """A second press of "Save" on the add page must not file the incident twice."""
        user = request.user
        if user.pk is None:
            return
        # Locking the filer's own user row queues their concurrent filings one behind the
        # other (the admin's atomic block holds it), so the second one sees the first.
        get_user_model()._default_manager.select_for_update().filter(pk=user.pk).first()
        since = timezone.now() - DUPLICATE_FILING_WINDOW
        earlier = (
            Incident.objects.filter(
                created_by=user.pk, title=data["title"].strip(), kind=data["kind"], created_at__gte=since
            )
            .order_by("-created_at")
            .first()
        )
        if earlier is not None:
            raise ServiceRejected(
                ValidationError(
                    f"You filed “{earlier.title}” at {earlier.created_at:%H:%M:%S} UTC already; "
                    "it was not filed a second time. Open it from the incident list."
                )
            )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        incident: Incident = form.instance
        if formset.model is ImpactWindow:
            self._save_windows(incident, formset)
        elif formset.model is IncidentReport:
            self._save_report(incident, formset)
        elif formset.model is ActionItem:
            self._save_action_items(incident, formset)
        else:
            _record_formset(formset, new=[], changed=[], deleted=[])  # the timeline is read only

    def _save_windows(self, incident: Incident, formset: Any) -> None:
        new, changed, deleted = [], [], []
        deleting = set(formset.deleted_forms) if formset.can_delete else set()
        for number, window_form in enumerate(formset.forms, start=1):
            context = f"Impact window {number}"
            if window_form in deleting:
                if window_form.instance.pk is not None:
                    _call(context, services.impact_window_delete, window=window_form.instance)
                    deleted.append(window_form.instance)
                continue
            if not window_form.has_changed():
                continue
            data = window_form.cleaned_data
            if window_form.instance.pk is None or window_form in formset.extra_forms:
                new.append(
                    _call(
                        context,
                        services.impact_window_add,
                        incident=incident,
                        product=data["product"],
                        location=data.get("location"),
                        level=data["level"],
                        started_at=data["started_at"],
                        ended_at=data.get("ended_at"),
                        description=data.get("description", ""),
                    )
                )
            elif (
                window_form.changed_data == ["ended_at"]
                and window_form.initial.get("ended_at") is None
                and data.get("ended_at") is not None
            ):
                # Only an end typed into an open window: that is closing it.
                window = _call(
                    context,
                    services.impact_window_close,
                    window=window_form.instance,
                    ended_at=data["ended_at"],
                )
                changed.append((window, window_form.changed_data))
            else:
                window = _call(
                    context,
                    services.impact_window_edit,
                    window=window_form.instance,
                    product=data["product"],
                    location=data.get("location"),
                    level=data["level"],
                    started_at=data["started_at"],
                    ended_at=data.get("ended_at"),
                    description=data.get("description", ""),
                )
                changed.append((window, window_form.changed_data))
        _record_formset(formset, new=new, changed=changed, deleted=deleted)

    def _save_report(self, incident: Incident, formset: Any) -> None:
        new, changed = [], []
        for report_form in formset.forms:
            if not report_form.has_changed():
                continue
            data = report_form.cleaned_data
            existed = report_form.instance.pk is not None
            report = _call(
                "Incident report",
                services.report_save,
                incident=incident,
                kind=data["kind"],
                summary=data.get("summary", ""),
                root_cause=data.get("root_cause", ""),
                remediation=data.get("remediation", ""),
                impact_description=data.get("impact_description", ""),
            )
            status = data.get("status")
            if status and status != report.status:
                report = _call(
                    "Incident report", services.report_set_status, incident=incident, status=status
                )
            if existed:
                changed.append((report, report_form.changed_data))
            else:
                new.append(report)
        _record_formset(formset, new=new, changed=changed, deleted=[])

    def _save_action_items(self, incident: Incident, formset: Any) -> None:
        new, changed = [], []
        for number, item_form in enumerate(formset.forms, start=1):
            if not item_form.has_changed():
                continue
            context = f"Action item {number}"
            data = item_form.cleaned_data
            if item_form.instance.pk is None or item_form in formset.extra_forms:
                item = _call(
                    context,
                    services.action_item_create,
                    incident=incident,
                    title=data["title"],
                    type=data["type"],
                    priority=data["priority"],
                    owner=data.get("owner"),
                    due_date=data.get("due_date"),
                    tracker_url=data.get("tracker_url", ""),
                    is_public=bool(data.get("is_public")),
                )
                if data.get("status") and data["status"] != item.status:
                    item = _call(
                        context, services.action_item_edit, item=item, changes={"status": data["status"]}
                    )
                new.append(item)
            else:
                changes = {name: data[name] for name in item_form.changed_data}
                item = _call(context, services.action_item_edit, item=item_form.instance, changes=changes)
                changed.append((item, item_form.changed_data))
        _record_formset(formset, new=new, changed=changed, deleted=[])

    def delete_model(self, request: HttpRequest, obj: Incident) -> None:
        services.incident_delete(incident=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Incident]) -> None:
        for incident in queryset:
            services.incident_delete(incident=incident)

    # --- Changelist actions --------------------------------------------------------------

    def _apply_to_each(
        self,
        request: HttpRequest,
        queryset: QuerySet[Incident],
        service: Callable[[Incident], object],
        *,
        log: str,
        done_message: str,
    ) -> None:
        """Run one service per selected incident; refusals become warnings, not errors."""
        done = 0
        for incident in queryset:
            try:
                service(incident)
            except ValidationError as exc:
                self.message_user(request, f"{incident}: {' '.join(exc.messages)}", messages.WARNING)
            else:
                done += 1
                self.log_change(request, incident, log)
        if done:
            self.message_user(request, done_message.format(done=done), messages.SUCCESS)

    @admin.action(description="Resolve selected incidents (closes their open impact windows)")
    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Incident]) -> None:
        self._apply_to_each(
            request,
            queryset,
            lambda incident: services.incident_resolve(incident=incident, author=_actor(request)),
            log="Resolved",
            done_message="Resolved {done} incident(s).",
        )

    @admin.action(description="Publish the incident reports of selected incidents")
    def publish_reports(self, request: HttpRequest, queryset: QuerySet[Incident]) -> None:
        self._apply_to_each(
            request,
            queryset,
            lambda incident: services.report_publish(incident=incident, actor=_actor(request)),
            log="Published the incident report",
            done_message="Published {done} report(s).",
        )

    # --- The incident buttons ------------------------------------------------------------

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
                author=_actor(request),
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
                        author=_actor(request),
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
                services.report_publish(incident=incident, actor=_actor(request))
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


def _filled_forms(formset: BaseFormSet) -> list[dict[str, Any]]:
    """The cleaned data of the rows a person actually filled in (not blank, not deleted)."""
    return [
        f.cleaned_data
        for f in formset.forms
        if f.has_changed() and not f.cleaned_data.get("DELETE") and f.cleaned_data
    ]


# --- Action items across incidents ------------------------------------------------------------


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
    fields = [
        "incident",
        "title",
        "description",
        "type",
        "priority",
        "status",
        "owner",
        "due_date",
        "tracker_url",
        "is_public",
    ]
    actions = ["mark_in_progress", "mark_done", "mark_wont_do"]

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
        data = form.cleaned_data
        if change:
            changes = {
                name: data[name] for name in form.changed_data if name in services.ACTION_ITEM_EDITABLE_FIELDS
            }
            if changes:
                _call("", services.action_item_edit, item=obj, changes=changes)
            return
        item = _call(
            "",
            services.action_item_create,
            incident=data["incident"],
            title=data["title"],
            description=data.get("description", ""),
            type=data["type"],
            priority=data["priority"],
            owner=data.get("owner"),
            due_date=data.get("due_date"),
            tracker_url=data.get("tracker_url", ""),
            is_public=bool(data.get("is_public")),
        )
        if data.get("status") and data["status"] != item.status:
            item = _call("", services.action_item_edit, item=item, changes={"status": data["status"]})
        obj.pk = item.pk
        obj._state.adding = False
        obj._state.db = item._state.db

    def _mark(self, request: HttpRequest, queryset: QuerySet[ActionItem], status: str) -> None:
        count = 0
        for item in queryset:
            if item.status != status:
                services.action_item_edit(item=item, changes={"status": status})
                count += 1
        self.message_user(request, f"Updated {count} action item(s).", messages.SUCCESS)

    @admin.action(description="Mark selected as in progress")
    def mark_in_progress(self, request: HttpRequest, queryset: QuerySet[ActionItem]) -> None:
        self._mark(request, queryset, ActionItem.Status.IN_PROGRESS)

    @admin.action(description="Mark selected as done")
    def mark_done(self, request: HttpRequest, queryset: QuerySet[ActionItem]) -> None:
        self._mark(request, queryset, ActionItem.Status.DONE)

    @admin.action(description="Mark selected as won't do")
    def mark_wont_do(self, request: HttpRequest, queryset: QuerySet[ActionItem]) -> None:
        self._mark(request, queryset, ActionItem.Status.WONT_DO)
