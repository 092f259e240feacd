"""Writes of the outbox: enqueue, claim, deliver in batches, record outcomes, sweep.

Rows are queued in the caller's transaction and one task per destination delivers them
after the commit, behind a circuit breaker, with leases, backoff and a sweeper. Why it is
built this way, and the one duplicate it allows: docs/adr/0002-outbox.md.
"""

from __future__ import annotations

from outbox.services.claim import message_claim
from outbox.services.deliver import destination_deliver, message_deliver
from outbox.services.enqueue import (
    _COLUMNS,
    EmailSpec,
    Queued,
    SharedBody,
    SharedEmailSpec,
    WebhookSpec,
    email_enqueue,
    messages_enqueue_many,
    webhook_enqueue,
)
from outbox.services.handlers import outbox_register_handler
from outbox.services.kicks import outbox_kick, outbox_kick_taken, publish_task
from outbox.services.outcomes import backoff_delay
from outbox.services.staff import message_cancel, message_confirm_delivered, message_retry
from outbox.services.sweep import outbox_sweep
from outbox.services.validation import clean_addresses

# What the rooms above, the outbox's own tasks and admin, the benches and the tests use.
__all__ = [
    "_COLUMNS",
    "EmailSpec",
    "Queued",
    "SharedBody",
    "SharedEmailSpec",
    "WebhookSpec",
    "backoff_delay",
    "clean_addresses",
    "destination_deliver",
    "email_enqueue",
    "message_cancel",
    "message_claim",
    "message_confirm_delivered",
    "message_deliver",
    "message_retry",
    "messages_enqueue_many",
    "outbox_kick",
    "outbox_kick_taken",
    "outbox_register_handler",
    "outbox_sweep",
    "publish_task",
    "webhook_enqueue",
]
