"""Staff view of the outbox: what went out, what failed and why, retry or cancel."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from outbox import services
from outbox.models import DeliveryAttempt, Destination, OutboundMessage


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "finished_at", "outcome", "status_code", "retry_delay", "error")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(OutboundMessage)
class OutboundMessageAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "channel",
        "purpose",
        "target",
        "subject_line",
        "state",
        "attempts",
        "ambiguous_count",
        "last_error_short",
        "created_at",
        "sent_at",
    )
    # state "Needs review": the connection dropped after the whole message was sent, twice.
    list_filter = ("state", "channel", "purpose", "destination")
    search_fields = ("idempotency_key", "ref", "subject", "body__subject", "url", "message_id", "to")
    list_select_related = ("body",)
    date_hierarchy = "created_at"
    inlines = [DeliveryAttemptInline]
    actions = ["retry_messages", "cancel_messages", "confirm_delivered"]
    exclude = ("secret",)

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        # Rows are written by services only; the admin shows them and offers actions.
        return [f.name for f in OutboundMessage._meta.fields if f.name != "secret"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="to / url")
    def target(self, obj: OutboundMessage) -> str:
        return ", ".join(obj.to) if obj.channel == OutboundMessage.Channel.EMAIL else obj.url

    @admin.display(description="subject")
    def subject_line(self, obj: OutboundMessage) -> str:
        # A shared body's subject, its stand-ins filled in for this message.
        return obj.content()[0] if obj.channel == OutboundMessage.Channel.EMAIL else ""

    @admin.display(description="last error")
    def last_error_short(self, obj: OutboundMessage) -> str:
        return obj.last_error[:120]

    @admin.action(description="Retry now (fresh attempt budget)")
    def retry_messages(self, request: HttpRequest, queryset: QuerySet[OutboundMessage]) -> None:
        done = 0
        for message in queryset:
            try:
                services.message_retry(message=message)
                done += 1
            except ValidationError as exc:
                self.message_user(request, f"#{message.pk}: {'; '.join(exc.messages)}", messages.WARNING)
        self.message_user(request, f"{done} message(s) queued again.")

    @admin.action(description="Confirm delivered (only messages under review)")
    def confirm_delivered(self, request: HttpRequest, queryset: QuerySet[OutboundMessage]) -> None:
        done = 0
        for message in queryset:
            try:
                services.message_confirm_delivered(message=message)
                done += 1
            except ValidationError as exc:
                self.message_user(request, f"#{message.pk}: {'; '.join(exc.messages)}", messages.WARNING)
        self.message_user(request, f"{done} message(s) recorded as delivered.")

    @admin.action(description="Cancel (only pending messages)")
    def cancel_messages(self, request: HttpRequest, queryset: QuerySet[OutboundMessage]) -> None:
        done = 0
        for message in queryset:
            try:
                services.message_cancel(message=message)
                done += 1
            except ValidationError as exc:
                self.message_user(request, f"#{message.pk}: {'; '.join(exc.messages)}", messages.WARNING)
        self.message_user(request, f"{done} message(s) cancelled.")


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    list_display = ("message", "number", "started_at", "outcome", "status_code", "retry_delay", "error")
    list_filter = ("outcome",)
    list_select_related = ("message",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Destination)
class DestinationAdmin(admin.ModelAdmin):
    """Each receiver's circuit breaker: open means nothing connects until `open until`."""

    list_display = ("key", "state", "failures", "open_until", "last_error", "kicked_at", "updated_at")
    list_filter = ("state",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
