"""What the credits services share: the outbox purpose and key of a notice's email, the
claim deadline a letter carries, and chunking."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from credits import sla
from credits.models import SLAPolicy

OUTBOX_PURPOSE = "credit_notice"
Progress = Callable[[int, int], None]

# A chunk is a few statements whatever its size (arrays on PostgreSQL); 5,000 keeps the
# rows of one chunk small.
APPROVE_CHUNK = 5000


def chunks(items: list[int], size: int = APPROVE_CHUNK) -> list[list[int]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def notice_outbox_key(customer_id: int, policy_id: int, period: str) -> str:
    # Per customer, policy and period, not per row: even if a notice were deleted and
    # computed again, its email could not be queued a second time.
    return f"credit-notice:{customer_id}:{policy_id}:{period}"


def claim_deadline_on(policy: SLAPolicy, day: date) -> date:
    """The claim deadline of a letter sent on `day`: the policy's window after it."""
    return sla.claim_deadline(day, policy.claim_window_days)
