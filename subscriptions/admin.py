"""Staff view of subscribers. Deliveries and their attempts are in the outbox admin."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from subscriptions import notifications, services
from subscriptions.models import Fanout, Subscriber


@admin.register(Subscriber)
class SubscriberAdmin(admin.ModelAdmin):
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

    @admin.action(description="Re-enable the selected webhooks (reset failures)")
    def reenable_webhooks(self, request: HttpRequest, queryset: QuerySet[Subscriber]) -> None:
        count = 0
        for subscriber in queryset.exclude(kind=Subscriber.Kind.EMAIL):
            services.subscriber_reenable(subscriber=subscriber)
            count += 1
        self.message_user(request, f"{count} webhook(s) re-enabled.")

    @admin.action(description="Send a test event to the selected webhooks")
    def send_test_event(self, request: HttpRequest, queryset: QuerySet[Subscriber]) -> None:
        count = 0
        for subscriber in queryset.filter(kind=Subscriber.Kind.WEBHOOK, disabled_at__isnull=True):
            notifications.webhook_test_send(subscriber=subscriber)
            count += 1
        self.message_user(request, f"Test event queued for {count} webhook(s); see their outbox messages.")


@admin.register(Fanout)
class FanoutAdmin(admin.ModelAdmin):
    list_display = ("key", "recipients", "created_at")
    search_fields = ("key",)
    readonly_fields = ("key", "recipients", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
