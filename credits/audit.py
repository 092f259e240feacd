"""The credits audit log: one row per step (computed, confirmation shown, approved, sent,
cancelled, refused). Written inside the transaction of the step it records, so the log
never claims a step that rolled back."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from credits.models import AuditAction, CreditAuditEntry, CreditNotice


def _label(actor: Any) -> str:
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
        actor_label=_label(actor),
        via=via,
        action=AuditAction(action),
        period=period or (notice.period if notice is not None else ""),
        notice=notice,
        count=count,
        detail=detail[:2000],
    )
