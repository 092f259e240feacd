"""The credits audit log: one row per step (computed, confirmation shown, approved, sent,
cancelled, refused). Written inside the transaction of the step it records, so the log
never claims a step that rolled back."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from core import bulk
from credits.models import AuditAction, CreditAuditEntry, CreditNotice


def actor_label(actor: Any) -> str:
    """How the log names `actor` (kept if the user is deleted); empty for the system."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return ""
    return str(actor.get_username())[:150]


def audit_record(
    *,
    action: str,
    actor: Any = None,
    via: str = "",
    period: str = "",
    notice: CreditNotice | None = None,
    count: int = 0,
    detail: str = "",
) -> CreditAuditEntry:
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return CreditAuditEntry.objects.create(
        at=timezone.now(),
        actor=user,
        actor_label=actor_label(actor),
        via=via,
        action=AuditAction(action),
        period=period or (notice.period if notice is not None else ""),
        notice=notice,
        count=count,
        detail=detail[:2000],
    )


def audit_record_many(
    *, action: str, actor: Any = None, via: str = "", notices: list[tuple[CreditNotice, str]]
) -> int:
    """One row per (notice, detail), written in one statement: a send of 10,000 notices
    logs each of them without 10,000 INSERTs. A row the log's unique constraints refuse
    (a notice's second "Sent") is skipped, not an error."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    now, label, action = timezone.now(), actor_label(actor), AuditAction(action)
    return bulk.bulk_insert(
        CreditAuditEntry,
        ("at", "actor_id", "actor_label", "via", "action", "period", "notice_id", "count", "detail"),
        [
            (now, user.pk if user else None, label, via, action, notice.period, notice.pk, 1, detail[:2000])
            for notice, detail in notices
        ],
        ignore_conflicts=True,
    )
