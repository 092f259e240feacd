"""Two-step sending: what a send would do (count, totals, recipients) and a signed token
that says someone saw exactly that; then the send, which refuses without the token.

The token signs the notice ids together with each one's state and credit, so a notice
recomputed (or cancelled) after the confirmation page was shown makes the token stale and
the send asks again instead of mailing figures nobody looked at.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction

from credits import selectors, services
from credits.models import AuditAction, CreditNotice, NoticeState
from credits.services.audit import audit_record, audit_record_many

SALT = "credits.confirm.v1"
MAX_AGE_SECONDS = 3600
SENDABLE = (NoticeState.COMPUTED, NoticeState.APPROVED, NoticeState.FAILED)


@dataclass(frozen=True)
class MoneyTotal:
    currency: str
    amount: Decimal


@dataclass
class SendPlan:
    notices: list[CreditNotice]
    skipped: list[CreditNotice]
    days: Decimal = Decimal(0)
    percent: Decimal = Decimal(0)
    money: list[MoneyTotal] = field(default_factory=list)
    percent_without_bill: int = 0
    recipients: list[tuple[str, list[str]]] = field(default_factory=list)
    token: str = ""

    @property
    def count(self) -> int:
        return len(self.notices)

    @property
    def recipient_count(self) -> int:
        return sum(len(addresses) for _, addresses in self.recipients)


def _fingerprint(notices: Iterable[CreditNotice]) -> str:
    text = "|".join(f"{n.pk}:{n.state}:{n.credit}:{n.unit}:{n.credit_amount}" for n in notices)
    return hashlib.sha256(text.encode()).hexdigest()


def send_plan(*, ids: Iterable[int]) -> SendPlan:
    """What sending these notices would do. Only computed, approved or failed ones go."""
    rows = list(
        CreditNotice.objects.filter(pk__in=set(ids))
        .select_related("customer", "policy")
        .order_by("customer__name", "pk")
    )
    plan = SendPlan(
        notices=[n for n in rows if n.state in SENDABLE], skipped=[n for n in rows if n.state not in SENDABLE]
    )
    money: dict[str, Decimal] = {}
    for n in plan.notices:
        if n.unit == CreditNotice.Unit.DAYS:
            plan.days += n.credit
        else:
            plan.percent += n.credit
            if n.credit_amount is None:
                plan.percent_without_bill += 1
            else:
                money[n.customer.currency] = money.get(n.customer.currency, Decimal(0)) + n.credit_amount
        plan.recipients.append((n.customer.name, list(n.customer.billing_emails)))
    plan.money = [MoneyTotal(c, a) for c, a in sorted(money.items())]
    ordered = sorted(plan.notices, key=lambda n: n.pk)
    plan.token = signing.dumps({"ids": [n.pk for n in ordered], "fp": _fingerprint(ordered)}, salt=SALT)
    return plan


def send_preview(*, ids: Iterable[int], actor: Any, via: str) -> SendPlan:
    """`send_plan`, logged as shown to `actor`: the confirmation page's (and API's) step."""
    plan = send_plan(ids=ids)
    plan_shown(plan=plan, actor=actor, via=via)
    return plan


def plan_shown(*, plan: SendPlan, actor: Any, via: str) -> None:
    audit_record(
        action=AuditAction.PREVIEWED,
        actor=actor,
        via=via,
        period=_period(plan.notices),
        count=plan.count,
        detail=_summary_text(plan),
    )


def _period(notices: list[CreditNotice]) -> str:
    periods = {n.period for n in notices}
    return periods.pop() if len(periods) == 1 else ""


def _summary_text(plan: SendPlan) -> str:
    parts = [f"{plan.count} notice(s)"]
    if plan.days:
        parts.append(f"{plan.days.normalize():f} day(s)")
    if plan.percent:
        parts.append(f"{plan.percent.normalize():f} percent-of-bill")
    parts += [f"{m.currency} {m.amount}" for m in plan.money]
    return ", ".join(parts)


def confirmed_ids(token: str) -> list[int]:
    """The ids a valid, fresh token confirms; ValidationError when it is not."""
    try:
        data = signing.loads(token or "", salt=SALT, max_age=MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        raise ValidationError("The confirmation has expired; look at the figures again.") from None
    except signing.BadSignature:
        raise ValidationError("This send was not confirmed.") from None
    ids = [int(i) for i in data["ids"]]
    current = list(CreditNotice.objects.filter(pk__in=ids).order_by("pk"))
    if [n.pk for n in current] != ids or _fingerprint(current) != data["fp"]:
        raise ValidationError("These notices changed after the confirmation was shown; confirm again.")
    return ids


def credits_send_confirmed(*, token: str, actor: Any, via: str) -> services.SendSummary:
    """Approve and queue exactly the confirmed notices, and log who did it."""
    try:
        confirmed_ids(token)
    except ValidationError as exc:
        # Logged outside the send's transaction: the refusal itself must be kept.
        audit_record(action=AuditAction.REFUSED, actor=actor, via=via, detail="; ".join(exc.messages))
        raise
    with transaction.atomic():
        ids = confirmed_ids(token)
        notices = list(CreditNotice.objects.filter(pk__in=ids).select_related("customer"))
        summary = services.credits_approve_and_send(notices=notices, actor=actor, confirmed=True)
        entries = []
        for notice in notices:
            amount = f" ({notice.customer.currency} {notice.credit_amount})" if notice.credit_amount else ""
            entries.append(
                (
                    notice,
                    f"{notice.customer.name}: {notice.credit.normalize():f} {notice.unit}{amount}"
                    f" to {', '.join(notice.customer.billing_emails)}",
                )
            )
        audit_record_many(action=AuditAction.APPROVED, actor=actor, via=via, notices=entries)
    return summary


def credits_send_requested(
    *, token: str, confirmed: bool, period: str = "", ids: Iterable[int] = (), actor: Any, via: str
) -> services.SendSummary:
    """The API's send: by a confirmation `token`, or without one the notices of `period`
    and/or `ids` when the caller said `confirmed`; refused and logged otherwise. Errors
    name the field at fault (`confirm` or `confirmation`)."""
    if not token:
        if not confirmed:
            refuse_unconfirmed(actor=actor, via=via, detail="approve without confirm")
            raise ValidationError(
                {"confirm": 'Nothing was sent: pass "confirm": true or a confirmation from send-preview.'}
            )
        token = send_plan(ids=selectors.notice_ids_selected(period=period, ids=ids)).token
    try:
        return credits_send_confirmed(token=token, actor=actor, via=via)
    except ValidationError as exc:
        raise ValidationError({"confirmation": exc.messages}) from None


def refuse_unconfirmed(*, actor: Any, via: str, detail: str = "") -> None:
    """Log a send that came without confirmation (the caller then sends nothing)."""
    audit_record(action=AuditAction.REFUSED, actor=actor, via=via, detail=detail or "no confirmation")
