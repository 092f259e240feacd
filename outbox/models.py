"""The outbox: one durable row per email or webhook delivery.

A row is written in the caller's transaction, so the side effect exists exactly when the
business change that caused it exists. Celery only carries the row id; the database is the
source of truth for what still has to be delivered (a flushed or restarted Redis loses
nothing, the sweeper re-enqueues from here).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook"


class MessageState(models.TextChoices):
    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class AttemptOutcome(models.TextChoices):
    STARTED = "started", "Started"
    SENT = "sent", "Sent"
    TRANSIENT = "transient", "Transient error (will retry)"
    PERMANENT = "permanent", "Permanent error"
    LOST = "lost", "Lost (worker died or lease expired)"


FINAL_STATES = (MessageState.SENT, MessageState.FAILED, MessageState.CANCELLED)


class OutboundMessage(models.Model):
    Channel = Channel

    State = MessageState

    channel = models.CharField(max_length=8, choices=Channel.choices)
    idempotency_key = models.CharField(max_length=255, unique=True)
    purpose = models.CharField(max_length=64, blank=True, help_text="Which handler reacts to the outcome.")
    ref = models.CharField(max_length=200, blank=True, help_text="The caller's object, e.g. notice:42.")
    # Email
    to = models.JSONField(default=list, blank=True)
    subject = models.CharField(max_length=998, blank=True)
    body_text = models.TextField(blank=True)
    body_html = models.TextField(blank=True)
    headers = models.JSONField(default=dict, blank=True)
    message_id = models.CharField(max_length=255, blank=True)
    # Webhook
    url = models.URLField(max_length=2000, blank=True)
    payload = models.JSONField(null=True, blank=True)
    secret = models.CharField(max_length=255, blank=True)
    # Delivery state
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0, help_text="Claims so far (each one may send).")
    max_attempts = models.PositiveIntegerField(default=8)
    next_attempt_at = models.DateTimeField(help_text="A pending row is due from this time.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(channel__in=Channel.values), name="outbox_channel_valid"),
            models.CheckConstraint(condition=Q(state__in=MessageState.values), name="outbox_state_valid"),
            models.CheckConstraint(
                condition=~Q(state="sent") | Q(sent_at__isnull=False), name="outbox_sent_has_time"
            ),
            models.CheckConstraint(
                condition=~Q(state="sending") | Q(lease_expires_at__isnull=False),
                name="outbox_sending_has_lease",
            ),
        ]
        indexes = [
            # The sweep: due pending rows, and claimed rows whose lease ran out.
            models.Index(fields=["state", "next_attempt_at"], name="outbox_state_due"),
            models.Index(fields=["state", "lease_expires_at"], name="outbox_state_lease"),
            models.Index(fields=["purpose", "ref"], name="outbox_purpose_ref"),
        ]

    def __str__(self) -> str:
        target = ", ".join(self.to) if self.channel == Channel.EMAIL else self.url
        return f"{self.get_channel_display()} {self.purpose or '-'} to {target} ({self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES


class DeliveryAttempt(models.Model):
    """One try at delivering a message: kept for staff to see why something failed."""

    Outcome = AttemptOutcome

    message = models.ForeignKey(OutboundMessage, on_delete=models.CASCADE, related_name="delivery_attempts")
    number = models.PositiveIntegerField(help_text="The message's attempt counter for this try.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.STARTED)
    status_code = models.PositiveIntegerField(null=True, blank=True, help_text="SMTP or HTTP code.")
    error = models.TextField(blank=True)
    retry_delay = models.FloatField(null=True, blank=True, help_text="Seconds until the next try.")

    class Meta:
        ordering = ["message_id", "number", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(outcome__in=AttemptOutcome.values), name="attempt_outcome_valid"
            )
        ]
        indexes = [models.Index(fields=["outcome", "started_at"], name="attempt_outcome_started")]

    def __str__(self) -> str:
        return f"Attempt {self.number} of message {self.message_id}: {self.outcome}"
