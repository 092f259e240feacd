"""The outbox's tables: one durable row per email or webhook, written in the caller's
transaction; the database, not the broker, says what is still to deliver.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.html import escape


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook"


class MessageState(models.TextChoices):
    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    # The server may have it: the connection dropped after the whole message was sent,
    # twice. Nothing resends it; staff decide (confirm delivered, or retry).
    REVIEW = "review", "Needs review (may have been delivered)"


class AttemptOutcome(models.TextChoices):
    STARTED = "started", "Started"
    SENT = "sent", "Sent"
    TRANSIENT = "transient", "Transient error (will retry)"
    PERMANENT = "permanent", "Permanent error"
    LOST = "lost", "Lost (worker died or lease expired)"
    # The destination was unreachable (refused, timed out, 421, HTTP 5xx): the attempt is
    # given back; such messages give up by age, not by count.
    OUTAGE = "outage", "Destination unavailable (attempt not counted)"
    # The connection dropped after the message (or webhook body) was sent, before the
    # reply: the receiver may or may not have it.
    AMBIGUOUS = "ambiguous", "Ambiguous (sent, no reply)"


class CircuitState(models.TextChoices):
    CLOSED = "closed", "Closed (delivering)"
    OPEN = "open", "Open (not connecting)"
    HALF_OPEN = "half_open", "Half-open (one probe)"


class MessageBody(models.Model):
    """An email's subject and bodies, stored once for every message that shares them.

    A credit run mails thousands of alike letters that differ only in a name: each
    message points at one shared body and carries its own `fills` (stand-in -> value),
    put in when the email is built, so the letter is stored once, not once per customer.
    """

    digest = models.CharField(max_length=64, unique=True, help_text="sha256 of subject, text and HTML.")
    subject = models.CharField(max_length=998)
    text = models.TextField()
    html = models.TextField(blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.subject


FINAL_STATES = (MessageState.SENT, MessageState.FAILED, MessageState.CANCELLED, MessageState.REVIEW)


class OutboundMessage(models.Model):
    Channel = Channel

    State = MessageState

    channel = models.CharField(max_length=8, choices=Channel.choices)
    idempotency_key = models.CharField(max_length=255, unique=True)
    purpose = models.CharField(max_length=64, blank=True, help_text="Which handler reacts to the outcome.")
    ref = models.CharField(max_length=200, blank=True, help_text="The caller's object, e.g. notice:42.")
    destination = models.CharField(
        max_length=300, blank=True, help_text="Where it goes: 'smtp', or 'webhook:<host>:<port>'."
    )
    # Email
    to = models.JSONField(default=list, blank=True)
    subject = models.CharField(max_length=998, blank=True)
    body_text = models.TextField(blank=True)
    body_html = models.TextField(blank=True)
    # Or a shared body (then subject and the bodies above stay empty) and what to put in
    # for its stand-ins: in the subject and text as given, in the HTML escaped.
    body = models.ForeignKey(MessageBody, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    fills = models.JSONField(default=dict, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    message_id = models.CharField(max_length=255, blank=True)
    # Webhook
    url = models.URLField(max_length=2000, blank=True)
    payload = models.JSONField(null=True, blank=True)
    secret = models.CharField(max_length=255, blank=True)
    # Delivery state
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(
        default=0, help_text="Counted tries (an outage of the destination does not count)."
    )
    ambiguous_count = models.PositiveIntegerField(
        default=0, help_text="Times the connection dropped after the whole message was sent."
    )
    max_attempts = models.PositiveIntegerField(default=8)
    next_attempt_at = models.DateTimeField(help_text="A pending row is due from this time.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    # Marked sent the moment the receiver said so (one UPDATE per message, so a worker
    # killed mid-batch resends at most the message it was on), while its on_sent handler
    # still has to run with the batch's bulk recording; the sweeper runs it if the worker
    # died in between.
    handlers_pending = models.BooleanField(default=False)
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
            # The batch claim: due rows of one destination, oldest first.
            models.Index(fields=["destination", "state", "next_attempt_at"], name="outbox_dest_due"),
            models.Index(
                fields=["updated_at"], condition=Q(handlers_pending=True), name="outbox_handlers_pending"
            ),
        ]

    def __str__(self) -> str:
        target = ", ".join(self.to) if self.channel == Channel.EMAIL else self.url
        return f"{self.get_channel_display()} {self.purpose or '-'} to {target} ({self.state})"

    def content(self) -> tuple[str, str, str]:
        """(subject, text, html) as sent: the own fields, or the shared body filled in.

        Reads `body` (one query unless the caller loaded it, as the batch claim does).
        """
        if self.body_id is None:
            return self.subject, self.body_text, self.body_html
        body = self.body
        assert body is not None
        subject, text, html = body.subject, body.text, body.html
        for mark, value in (self.fills or {}).items():
            subject = subject.replace(mark, value)
            text = text.replace(mark, value)
            html = html.replace(mark, str(escape(value)))
        return subject, text, html


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


class Destination(models.Model):
    """One receiver (the SMTP relay, a webhook host): its circuit breaker and its kick.

    Shared by every process through the database, the source of truth. The breaker stops
    connecting after repeated outage-type failures and lets one probe through once the
    cool-down ran out. `kicked_at` / `kick_taken_at` make at most one "deliver this
    destination" task wait in the broker at a time, whoever queued it.
    """

    State = CircuitState

    key = models.CharField(max_length=300, unique=True)
    state = models.CharField(max_length=10, choices=CircuitState.choices, default=CircuitState.CLOSED)
    failures = models.PositiveIntegerField(default=0, help_text="Outage-type failures in a row.")
    opened_count = models.PositiveIntegerField(
        default=0, help_text="Times opened in a row (cool-down grows)."
    )
    open_until = models.DateTimeField(null=True, blank=True)
    probe_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    kicked_at = models.DateTimeField(null=True, blank=True, help_text="A delivery task was queued then.")
    kick_taken_at = models.DateTimeField(null=True, blank=True, help_text="A worker took that task then.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=CircuitState.values), name="destination_state_valid")
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"
