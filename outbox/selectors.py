"""Reads of the outbox."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from outbox.models import MessageState, OutboundMessage


def messages_for_ref(*, purpose: str, ref: str) -> QuerySet[OutboundMessage]:
    return OutboundMessage.objects.filter(purpose=purpose, ref=ref)


def outbox_counts() -> dict[str, int]:
    """Rows per state, every state present (0 when none)."""
    counts = dict.fromkeys(MessageState.values, 0)
    for row in OutboundMessage.objects.values("state").annotate(n=Count("id")):
        counts[row["state"]] = row["n"]
    return counts
