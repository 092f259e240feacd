"""Staff side of alert intake: integrations and their rules, the test-payload page, the
alert groups behind drafts (with the "needs attention" flag and one-click publish), and
the kept payloads. Every write goes through `alerts.services`.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from alerts import services
from alerts.models import Alert, AlertGroup, Integration, MappingRule, ReceivedPayload
from core import roles
from core.admin import ServiceModelAdmin, TabularInlineBase, actor, adopt, call_service, record_formset
from incidents.models import ImpactLevel, IncidentImpact, Product


class MatchersField(forms.CharField):
    """`label=value` pairs, one per line or comma-separated, in the form; a dict in the model."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
        return value

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        text = (super().to_python(value) or "").strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise ValidationError("Write label=value pairs, or a JSON object.") from None
            return parsed if isinstance(parsed, dict) else {}
        pairs: dict[str, str] = {}
        for part in (p.strip() for chunk in text.splitlines() for p in chunk.split(",")):
            if not part:
                continue
            name, sep, item = part.partition("=")
            if not sep:
                raise ValidationError(f"{part[:40]!r} is not label=value.")
            pairs[name.strip()] = item.strip()
        return pairs


class RuleForm(forms.ModelForm):
    matchers = MatchersField(required=False, help_text="e.g. service=storage, severity=critical")

    class Meta:
        model = MappingRule
        fields = [
            "position",
            "is_default",
            "matchers",
            "product",
            "location",
            "location_labels",
            "level",
            "impact",
            "auto_publish_after_minutes",
        ]


def _may(request: HttpRequest, action: str) -> bool:
    # The admin follows core.roles, like the services it calls: a role's group holds no
    # model permissions, only its actions.
    return roles.allowed(request.user, action)


class RuleInline(TabularInlineBase):
    model = MappingRule
    form = RuleForm
    extra = 1

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "console.view")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "alerts.manage")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "alerts.manage")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "alerts.manage")


class IntegrationCreateForm(forms.ModelForm):
    default_product = forms.ModelChoiceField(
        queryset=Product.objects.all(),
        help_text="Where alerts that match no rule are put (the default rule).",
    )
    default_level = forms.ChoiceField(choices=ImpactLevel.choices, initial=ImpactLevel.PARTIAL_OUTAGE)
    default_impact = forms.ChoiceField(choices=IncidentImpact.choices, initial=IncidentImpact.MINOR)

    class Meta:
        model = Integration
        fields = ["name", "kind", "is_active", "flap_debounce_seconds", "reopen_within_minutes"]


class IntegrationChangeForm(forms.ModelForm):
    class Meta:
        model = Integration
        fields = ["name", "is_active", "flap_debounce_seconds", "reopen_within_minutes"]


class TestPayloadForm(forms.Form):
    payload = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 18, "cols": 100, "spellcheck": "false"}),
        help_text="Paste a payload as the sender would post it. Nothing is written.",
    )


@admin.register(Integration)
class IntegrationAdmin(ServiceModelAdmin):
    list_display = ("name", "kind", "is_active", "intake_url", "rule_count", "created_at")
    list_filter = ("kind", "is_active")
    readonly_fields = ("kind_display", "intake_url", "secret_note", "test_payload_link")
    actions = ["rotate_secret"]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _may(request, "console.view")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "console.view")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return _may(request, "alerts.manage")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "alerts.manage")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        kwargs["form"] = IntegrationChangeForm if obj is not None else IntegrationCreateForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return [
                (
                    None,
                    {
                        "fields": [
                            *IntegrationCreateForm.Meta.fields,
                            "default_product",
                            "default_level",
                            "default_impact",
                        ]
                    },
                )
            ]
        return [
            (None, {"fields": ["name", "kind_display", "is_active"]}),
            ("Receiving", {"fields": ["intake_url", "secret_note", "test_payload_link"]}),
            ("Timing", {"fields": ["flap_debounce_seconds", "reopen_within_minutes"]}),
        ]

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[type[Any]]:
        # The default rule is made with the integration; further rules on its change page.
        return [RuleInline] if obj is not None else []

    @admin.display(description="kind")
    def kind_display(self, obj: Integration) -> str:
        return obj.get_kind_display()

    @admin.display(description="intake URL")
    def intake_url(self, obj: Integration) -> str:
        return reverse("api-alert-intake", kwargs={"integration_id": obj.pk}) if obj.pk else "-"

    @admin.display(description="secret")
    def secret_note(self, obj: Integration) -> str:
        return "Shown once when issued; rotate it (Integrations → action) if it is lost."

    @admin.display(description="rules")
    def rule_count(self, obj: Integration) -> int:
        return obj.rules.count()

    @admin.display(description="test")
    def test_payload_link(self, obj: Integration) -> str:
        if not obj.pk:
            return "-"
        url = reverse("admin:alerts_integration_test_payload", args=[obj.pk])
        return format_html('<a class="button" href="{}">Test a payload</a>', url)

    def save_model(self, request: HttpRequest, obj: Integration, form: Any, change: bool) -> None:
        data = form.cleaned_data
        if change:
            changes = {n: data[n] for n in form.changed_data if n in IntegrationChangeForm.Meta.fields}
            if changes:
                call_service(
                    "", services.integration_update, integration=obj, changes=changes, actor=actor(request)
                )
            return
        saved = call_service(
            "",
            services.integration_create,
            name=data["name"],
            kind=data["kind"],
            default_product=data["default_product"],
            default_level=data["default_level"],
            default_impact=data["default_impact"],
            flap_debounce_seconds=data["flap_debounce_seconds"],
            reopen_within_minutes=data["reopen_within_minutes"],
            is_active=data["is_active"],
            actor=actor(request),
        )
        adopt(obj, saved)
        obj.issued_secret = saved.issued_secret

    def response_add(self, request: HttpRequest, obj: Integration, *args: Any) -> HttpResponse:
        # The secret's one showing, instead of the usual redirect to a page that no longer has it.
        return self._secrets_page(request, [obj])

    def _secrets_page(self, request: HttpRequest, issued: list[Integration]) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "issued": issued,
            "title": "Copy the new secret",
        }
        # admin_view already marks every admin page never-cache (no-store included).
        return TemplateResponse(request, "admin/alerts/integration/secret_issued.html", context)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        integration = form.instance
        new: list[Any] = []
        changed: list[Any] = []
        deleted: list[Any] = []
        for row in formset.deleted_forms:
            if row.instance.pk is not None:
                call_service("Rule", services.rule_delete, rule=row.instance, actor=actor(request))
                deleted.append(row.instance)
        for number, row in enumerate(formset.forms, start=1):
            if row in formset.deleted_forms or not row.has_changed():
                continue
            data = row.cleaned_data
            saved = call_service(
                f"Rule {number}",
                services.rule_save,
                integration=integration,
                rule=row.instance if row.instance.pk is not None else None,
                actor=actor(request),
                **{name: data.get(name) for name in RuleForm.Meta.fields},
            )
            if row.instance.pk is None:
                new.append(saved)
            else:
                changed.append((saved, row.changed_data))
        record_formset(formset, new=new, changed=changed, deleted=deleted)

    @admin.action(description="Rotate the secret of the selected integrations", permissions=["change"])
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[Integration]) -> HttpResponse:
        issued = [
            services.integration_rotate_secret(integration=integration, actor=actor(request))
            for integration in queryset
        ]
        return self._secrets_page(request, issued)

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<int:pk>/test-payload/",
                self.admin_site.admin_view(self.test_payload_view),
                name="alerts_integration_test_payload",
            ),
            *super().get_urls(),
        ]

    def test_payload_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """What a pasted payload would do, without writing anything (POST only reads)."""
        if not self.has_view_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        integration = get_object_or_404(Integration, pk=pk)
        form = TestPayloadForm(request.POST or None)
        lines: list[str] | None = None
        if request.method == "POST" and form.is_valid():
            lines = services.integration_preview(
                integration=integration, body=form.cleaned_data["payload"].encode("utf-8")
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": integration,
            "form": form,
            "lines": lines,
            "title": f"Test a payload: {integration.name}",
        }
        return TemplateResponse(request, "admin/alerts/integration/test_payload.html", context)


class AlertInline(TabularInlineBase):
    model = Alert
    fields = ("title", "status", "starts_at", "ends_at", "window", "used_default_rule", "flaps", "note")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AlertGroup)
class AlertGroupAdmin(admin.ModelAdmin):
    """The alerts behind each alert-fed incident; drafts first to review and publish."""

    list_display = ("incident_link", "visibility", "integration", "firing", "attention", "created_at")
    list_filter = ("integration", "incident__is_public")
    readonly_fields = (
        "incident_link",
        "integration",
        "group_key",
        "rule",
        "publish_due_at",
        "resolve_due_at",
        "needs_attention",
    )
    fields = readonly_fields
    inlines = [AlertInline]
    actions = ["publish_drafts"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AlertGroup]:
        return super().get_queryset(request).select_related("incident", "integration")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _may(request, "console.view")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "console.view")

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return _may(request, "incident.publish_draft")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="incident")
    def incident_link(self, obj: AlertGroup) -> str:
        url = reverse("admin:incidents_incident_change", args=[obj.incident_id])
        return format_html('<a href="{}">{}</a>', url, obj.incident.title)

    @admin.display(description="visibility")
    def visibility(self, obj: AlertGroup) -> str:
        return "public" if obj.incident.is_public else "DRAFT"

    @admin.display(description="firing")
    def firing(self, obj: AlertGroup) -> int:
        return obj.alerts.filter(status=Alert.Status.FIRING).count()

    @admin.display(description="needs attention")
    def attention(self, obj: AlertGroup) -> str:
        if not obj.needs_attention or obj.incident.is_closed:
            return ""
        return format_html('<strong style="color:#ba2121">⚠ {}</strong>', obj.needs_attention)

    @admin.action(description="Publish the selected drafts (subscribers are told)", permissions=["publish"])
    def publish_drafts(self, request: HttpRequest, queryset: QuerySet[AlertGroup]) -> None:
        published = 0
        for group in queryset.select_related("incident"):
            if not group.incident.is_public:
                services.alert_draft_publish(incident=group.incident, actor=actor(request))
                published += 1
        self.message_user(request, f"{published} draft(s) published.")


@admin.register(ReceivedPayload)
class ReceivedPayloadAdmin(admin.ModelAdmin):
    list_display = ("received_at", "integration", "status_code", "remote_addr")
    list_filter = ("integration", "status_code")
    readonly_fields = ("integration", "received_at", "remote_addr", "status_code", "outcome", "body")
    fields = readonly_fields

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _may(request, "console.view")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "console.view")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
