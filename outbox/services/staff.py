"""Staff actions on one message (the admin's buttons): retry, confirm delivered, cancel."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from outbox import conf
from outbox.models import MessageState, OutboundMessage
from outbox.services.handlers import run_handler
from outbox.services.kicks import kick_on_commit


@transaction.atomic
def message_retry(*, message: OutboundMessage, extra_attempts: int | None = None) -> OutboundMessage:
    """Staff action: give a failed, cancelled or reviewed message a fresh budget, deliver now."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state not in (MessageState.FAILED, MessageState.CANCELLED, MessageState.REVIEW):
        raise ValidationError("Only failed, cancelled or reviewed messages can be retried.")
    row.state = MessageState.PENDING
    row.max_attempts = row.attempts + (extra_attempts or conf.max_attempts())
    row.ambiguous_count = 0
    row.next_attempt_at = timezone.now()
    row.save(update_fields=["state", "max_attempts", "ambiguous_count", "next_attempt_at", "updated_at"])
    kick_on_commit(row.destination)
    return row


@transaction.atomic
def message_confirm_delivered(*, message: OutboundMessage) -> OutboundMessage:
    """Staff action on a message under review: the receiver has it, record it as sent."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state != MessageState.REVIEW:
        raise ValidationError("Only messages under review can be confirmed as delivered.")
    row.state = MessageState.SENT
    row.sent_at = timezone.now()
    row.save(update_fields=["state", "sent_at", "updated_at"])
    run_handler(row, "on_sent")
    return row


@transaction.atomic
def message_cancel(*, message: OutboundMessage) -> OutboundMessage:
    """Stop a message that has not gone out. One being sent right now cannot be stopped."""
    row = OutboundMessage.objects.select_for_update().get(pk=message.pk)
    if row.state != MessageState.PENDING:
        raise ValidationError(f"A {row.state} message cannot be cancelled.")
    row.state = MessageState.CANCELLED
    row.save(update_fields=["state", "updated_at"])
    return row
