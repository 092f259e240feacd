"""Staff side of SLA credits: customers, policies, and the notice review list.

The review list is where credits go out: compute a month, read the notices, then approve
and send (one email each, queued in the approval's transaction) or cancel. Every write goes
through `credits.services`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from core.admin import ServiceModelAdmin, actor, adopt, call_service, record_formset
from credits import services, sla
from credits.models import (
    CreditAuditEntry,
    CreditNotice,
    CreditTier,
    Customer,
    CustomerEntitlement,
    SLAPolicy,
)
from credits.services.policies import POLICY_DOWNTIME_RULES, POLICY_TERMS
from outbox import services as outbox


class BillingEmailsField(forms.CharField):
    """One address per line in the form; a validated list in the model."""

    widget = forms.Textarea(attrs={"rows": 3})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        # Only line breaks separate addresses; a CR/LF inside one line cannot occur here,
        # and anything else odd is refused by the outbox's address rules.
        return [line.strip() for line in text.splitlines() if line.strip()]

    def validate(self, value: Any) -> None:
        try:
            outbox.clean_addresses(value, field="billing_emails")
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["billing_emails"]) from None


class CustomerForm(forms.ModelForm):
    billing_emails = BillingEmailsField(help_text="One address per line.")

    class Meta:
        model = Customer
        fields = list(services.CUSTOMER_FIELDS)

    def clean_name(self) -> str:
        try:
            return services.clean_customer_name(self.cleaned_data["name"])
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["name"]) from None


class EntitlementInline(admin.TabularInline):
    model = CustomerEntitlement
    extra = 1
    autocomplete_fields = ()
    fields = services.ENTITLEMENT_FIELDS


@admin.register(Customer)
class CustomerAdmin(ServiceModelAdmin):
    form = CustomerForm
    list_display = ("name", "policy", "sla_eligible", "term_end_date", "monthly_bill", "currency", "language")
    list_filter = ("sla_eligible", "policy", "language")
    search_fields = ("name", "billing_emails")
    inlines = [EntitlementInline]

    def save_model(self, request: HttpRequest, obj: Customer, form: Any, change: bool) -> None:
        data = {name: form.cleaned_data[name] for name in CustomerForm.Meta.fields}
        if change:
            changes = {name: data[name] for name in form.changed_data if name in data}
            if changes:
                call_service("", services.customer_update, customer=obj, actor=request.user, **changes)
            return
        adopt(obj, call_service("", services.customer_create, actor=request.user, **data))

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        customer = form.instance
        new: list[Any] = []
        changed: list[Any] = []
        deleted: list[Any] = []
        for row in formset.deleted_forms:
            if row.instance.pk is not None:
                services.customer_unentitle(entitlement=row.instance, actor=actor(request))
                deleted.append(row.instance)
        for number, row in enumerate(formset.forms, start=1):
            if row in formset.deleted_forms or not row.has_changed():
                continue
            data = row.cleaned_data
            if row.instance.pk is not None and {"product", "location"} & set(row.changed_data):
                # A different product or location is a different entitlement.
                services.customer_unentitle(entitlement=row.instance, actor=actor(request))
            entitlement = call_service(
                f"Entitlement {number}",
                services.customer_entitle,
                customer=customer,
                product=data["product"],
                location=data.get("location"),
                policy=data.get("policy"),
                actor=request.user,
            )
            if row.instance.pk is None:
                new.append(entitlement)
            else:
                changed.append((entitlement, row.changed_data))
        record_formset(formset, new=new, changed=changed, deleted=deleted)


class TierInline(admin.TabularInline):
    model = CreditTier
    extra = 1
    fields = ("below", "credit")


class SLAPolicyForm(forms.ModelForm):
    class Meta:
        model = SLAPolicy
        fields = list(services.POLICY_FIELDS)

    def clean_time_zone(self) -> str:
        try:
            return services.clean_time_zone(self.cleaned_data["time_zone"])
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["time_zone"]) from None


@admin.register(SLAPolicy)
class SLAPolicyAdmin(ServiceModelAdmin):
    form = SLAPolicyForm
    list_display = (
        "name",
        "target",
        "unit",
        "time_zone",
        "min_downtime_minutes",
        "exclude_maintenance",
        "cap",
    )
    inlines = [TierInline]

    def save_model(self, request: HttpRequest, obj: SLAPolicy, form: Any, change: bool) -> None:
        data = {name: form.cleaned_data[name] for name in SLAPolicyForm.Meta.fields}
        if change:
            changes = {name: data[name] for name in form.changed_data if name in data}
            if changes:
                call_service("", services.policy_update, policy=obj, changes=changes, actor=request.user)
            return
        weights = services.policy_weights(data)
        adopt(
            obj,
            call_service("", services.policy_create, **data, weights=weights, tiers=(), actor=request.user),
        )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # Tiers are replaced as a whole, so the thresholds are checked together.
        kept = [
            row.cleaned_data for row in formset.forms if row.cleaned_data and row not in formset.deleted_forms
        ]
        tiers = [(d["below"], d["credit"]) for d in kept if d.get("below") is not None]
        saved = call_service(
            "Tiers", services.policy_set_tiers, policy=form.instance, tiers=tiers, actor=request.user
        )
        record_formset(formset, new=saved, changed=[], deleted=[])

    fieldsets = (
        (None, {"fields": POLICY_TERMS}),
        ("What counts as downtime", {"fields": (*services.POLICY_WEIGHT_FIELDS, *POLICY_DOWNTIME_RULES)}),
    )


class ComputeForm(forms.Form):
    period = forms.CharField(max_length=7, help_text="Calendar month, YYYY-MM.")

    def clean_period(self) -> str:
        try:
            return str(sla.Period.parse(self.cleaned_data["period"]))
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


@admin.register(CreditNotice)
class CreditNoticeAdmin(admin.ModelAdmin):
    # Credit and state first after the customer: they are what a reviewer reads, and the
    # long delivery columns can scroll off at 1280 px.
    list_display = (
        "customer",
        "credit_label",
        "state",
        "period",
        "policy",
        "uptime",
        "downtime_minutes",
        "delivery",
        "error",
        "sent_at",
    )
    list_filter = ("state", "period", "policy", "unit")
    search_fields = ("customer__name", "email_message_id")
    list_select_related = ("customer", "policy", "message")
    actions = ["approve_and_send", "cancel_notices", "recompute_periods"]
    readonly_fields = [f.name for f in CreditNotice._meta.fields] + ["incident_links", "delivery"]
    exclude = ("incidents",)
    change_list_template = "admin/credits/creditnotice/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # notices are computed, never typed in

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # a notice is cancelled, not deleted: it is the record of a decision

    @admin.display(description="uptime %", ordering="uptime_percent")
    def uptime(self, obj: CreditNotice) -> str:
        return f"{obj.uptime_percent}%"

    @admin.display(description="credit", ordering="credit")
    def credit_label(self, obj: CreditNotice) -> str:
        if obj.unit == CreditNotice.Unit.DAYS:
            return f"{int(obj.credit)} days"
        amount = f" ({obj.customer.currency} {obj.credit_amount})" if obj.credit_amount is not None else ""
        return f"{obj.credit}% of bill{amount}"

    @admin.display(description="email")
    def delivery(self, obj: CreditNotice) -> str:
        if obj.message is None:
            return "-"
        url = reverse("admin:outbox_outboundmessage_change", args=[obj.message.pk])
        return format_html(
            '<a href="{}">{} ({} attempt{})</a>',
            url,
            obj.message.state,
            obj.message.attempts,
            "" if obj.message.attempts == 1 else "s",
        )

    @admin.display(description="last error")
    def error(self, obj: CreditNotice) -> str:
        return obj.last_error[:300]

    @admin.display(description="incidents")
    def incident_links(self, obj: CreditNotice) -> str:
        rows = [
            (reverse("admin:incidents_incident_change", args=[i.pk]), i.title)
            for i in obj.incidents.order_by("started_at")
        ]
        return format_html_join(", ", '<a href="{}">{}</a>', rows) if rows else "-"

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "compute/", self.admin_site.admin_view(self.compute_view), name="credits_creditnotice_compute"
            ),
            *super().get_urls(),
        ]

    def compute_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_change_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        form = ComputeForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            period = form.cleaned_data["period"]
            summary = services.credits_compute(period=period, actor=request.user, via="admin")  # type: ignore[arg-type]
            self.message_user(
                request,
                f"{period}: {summary.customers_considered} customers measured; {summary.created} notices "
                f"created, {summary.updated} updated, {summary.unchanged} unchanged, {summary.removed} removed, "
                f"{summary.kept_final} past review left as they were.",
            )
            changelist = reverse("admin:credits_creditnotice_changelist")
            return HttpResponseRedirect(f"{changelist}?period={period}")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": "Compute SLA credits for a month",
        }
        return TemplateResponse(request, "admin/credits/creditnotice/compute.html", context)

    @admin.action(description="Approve and send the selected notices (asks to confirm)")
    def approve_and_send(self, request: HttpRequest, queryset: QuerySet[CreditNotice]) -> HttpResponse:
        # Sends nothing itself: the console's confirmation page shows the count, totals and
        # recipients and only its own POST sends (one confirmation path for every door).
        ids = sorted(queryset.values_list("pk", flat=True))
        query = urlencode([("ids", pk) for pk in ids] + [("via", "admin")])
        return HttpResponseRedirect(f"{reverse('console:credits_confirm')}?{query}")

    @admin.action(description="Cancel the selected notices")
    def cancel_notices(self, request: HttpRequest, queryset: QuerySet[CreditNotice]) -> None:
        done = 0
        for notice in queryset:
            try:
                services.credits_cancel(notice=notice, actor=request.user, via="admin")  # type: ignore[arg-type]
                done += 1
            except ValidationError as exc:
                self.message_user(request, f"{notice}: {'; '.join(exc.messages)}", messages.WARNING)
        self.message_user(request, f"{done} notice(s) cancelled.")

    @admin.action(description="Recompute the months of the selected notices")
    def recompute_periods(self, request: HttpRequest, queryset: QuerySet[CreditNotice]) -> None:
        for period in sorted(set(queryset.values_list("period", flat=True))):
            summary = services.credits_compute(period=period, actor=request.user, via="admin")  # type: ignore[arg-type]
            self.message_user(
                request,
                f"{period}: {summary.created} created, {summary.updated} updated, {summary.removed} removed.",
            )


@admin.register(CreditAuditEntry)
class CreditAuditEntryAdmin(admin.ModelAdmin):
    """Read-only: the log is written by the services and never edited by hand."""

    list_display = ("at", "actor_label", "via", "action", "period", "notice", "count", "detail")
    list_filter = ("action", "via", "period")
    search_fields = ("actor_label", "detail", "notice__customer__name")
    date_hierarchy = "at"
    list_select_related = ("notice__customer",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
