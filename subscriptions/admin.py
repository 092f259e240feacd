"""Staff view of subscribers. Deliveries and their attempts are in the outbox admin.

Writes go through the subscriptions services, which check the roles (webhook.manage for
webhooks, Slack and Teams; subscriber.manage for email subscribers).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from core import roles
from core.timezones import clean_zone
from subscriptions import notifications, services
from subscriptions.models import HOOK_KINDS, Fanout, Subscriber
from subscriptions.webhooks import validate_webhook_url


class SubscriberAdminForm(forms.ModelForm):
    """The subscribe form's rules for the address and a hook's URL (https, the documented
    Slack and Teams hosts, public addresses), reported on their fields."""

    url = forms.URLField(max_length=500, required=False, assume_scheme="https")

    class Meta:
        model = Subscriber
        # Not the secret: it is made at creation and rotated by its owner, never shown.
        fields = (
            "kind",
            "payload_format",
            "email",
            "url",
            "all_products",
            "language",
            "time_zone",
            "products",
            "confirmed_at",
            "disabled_at",
            "disabled_reason",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            if data.get("email"):
                data["email"] = services.clean_email(data["email"])
            if data.get("time_zone"):
                data["time_zone"] = clean_zone(data["time_zone"])
            if data.get("kind") in HOOK_KINDS:
                data["url"] = validate_webhook_url(data.get("url") or "", kind=data["kind"])
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, errors)
        return data


def _may_manage(request: HttpRequest) -> bool:
    return roles.allowed(request.user, "subscriber.manage") or roles.allowed(request.user, "webhook.manage")


@admin.register(Subscriber)
class SubscriberAdmin(admin.ModelAdmin):
    form = SubscriberAdminForm
    list_display = (
        "__str__",
        "kind",
        "email",
        "all_products",
        "language",
        "confirmed_at",
        "failure_count",
        "disabled_at",
    )
    list_filter = (
        "kind",
        "all_products",
        "language",
        ("confirmed_at", admin.EmptyFieldListFilter),
        ("disabled_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("email", "url")
    filter_horizontal = ("products",)
    readonly_fields = ("token", "created_at", "updated_at", "failure_count", "deliveries")
    exclude = ("secret",)
    actions = ("reenable_webhooks", "send_test_event")

    @admin.display(description="Deliveries")
    def deliveries(self, obj: Subscriber) -> str:
        if obj.pk is None:
            return "-"
        url = reverse("admin:outbox_outboundmessage_changelist") + f"?q={obj.outbox_ref}"
        return format_html('<a href="{}">Outbox messages for this subscriber</a>', url)

    # The roles decide, not Django's per-model permissions (the role groups hold
    # core.<action> permissions only); the services check again on every write.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_manage(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return _may_manage(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_manage(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_manage(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _may_manage(request)

    def has_webhook_permission(self, request: HttpRequest) -> bool:
        return roles.allowed(request.user, "webhook.manage")

    def save_model(self, request: HttpRequest, obj: Subscriber, form: Any, change: bool) -> None:
        services.subscriber_staff_save(subscriber=obj, actor=request.user)  # type: ignore[arg-type]

    def delete_model(self, request: HttpRequest, obj: Subscriber) -> None:
        services.subscriber_staff_delete(subscriber=obj, actor=request.user)  # type: ignore[arg-type]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Subscriber]) -> None:
        for subscriber in queryset:
            services.subscriber_staff_delete(subscriber=subscriber, actor=request.user)  # type: ignore[arg-type]

    @admin.action(description="Re-enable the selected webhooks (reset failures)", permissions=["webhook"])
    def reenable_webhooks(self, request: HttpRequest, queryset: QuerySet[Subscriber]) -> None:
        count = 0
        for subscriber in queryset.exclude(kind=Subscriber.Kind.EMAIL):
            services.subscriber_reenable(subscriber=subscriber, actor=request.user)  # type: ignore[arg-type]
            count += 1
        self.message_user(request, f"{count} webhook(s) re-enabled.")

    @admin.action(description="Send a test event to the selected webhooks", permissions=["webhook"])
    def send_test_event(self, request: HttpRequest, queryset: QuerySet[Subscriber]) -> None:
        count = 0
        for subscriber in queryset.filter(kind=Subscriber.Kind.WEBHOOK, disabled_at__isnull=True):
            notifications.webhook_test_send(subscriber=subscriber, actor=request.user)  # type: ignore[arg-type]
            count += 1
        self.message_user(request, f"Test event queued for {count} webhook(s); see their outbox messages.")


@admin.register(Fanout)
class FanoutAdmin(admin.ModelAdmin):
    list_display = ("key", "recipients", "created_at")
    search_fields = ("key",)
    readonly_fields = ("key", "recipients", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
