"""Two-step sending: what a send would do (count, totals, recipients) and a signed token
that says someone saw exactly that; then the send, which refuses without the token.

The token signs the notice ids together with each one's state and credit, so a notice
recomputed (or cancelled) after the confirmation page was shown makes the token stale and
the send asks again instead of mailing figures nobody looked at. A send above
CREDITS_SECOND_APPROVER_ABOVE needs two Finance users: the first prepares it, a different
one approves it (docs/adr/0012-credit-four-eyes.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from core.timezones import display_zone
from credits import selectors, services
from credits.models import AuditAction, CreditNotice, NoticeState, PreparedSend
from credits.services.audit import actor_label, audit_record, audit_record_many

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
    # The API's sum of percentages, kept for its clients; people are shown the count of
    # percent-of-bill letters and the money per currency instead (each percentage is of
    # its own customer's bill, so their sum means nothing).
    percent: Decimal = Decimal(0)
    percent_letters: int = 0
    money: list[MoneyTotal] = field(default_factory=list)
    percent_without_bill: int = 0
    recipients: list[tuple[str, list[str]]] = field(default_factory=list)
    token: str = ""
    # Four eyes: above the limit, and who prepared it (None until someone has).
    needs_second_approver: bool = False
    prepared: PreparedSend | None = None

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
            plan.percent_letters += 1
            if n.credit_amount is None:
                plan.percent_without_bill += 1
            else:
                money[n.customer.currency] = money.get(n.customer.currency, Decimal(0)) + n.credit_amount
        plan.recipients.append((n.customer.name, list(n.customer.billing_emails)))
    plan.money = [MoneyTotal(c, a) for c, a in sorted(money.items())]
    ordered = sorted(plan.notices, key=lambda n: n.pk)
    fingerprint = _fingerprint(ordered)
    plan.token = signing.dumps({"ids": [n.pk for n in ordered], "fp": fingerprint}, salt=SALT)
    plan.needs_second_approver = needs_second_approver(money.values())
    if plan.needs_second_approver:
        plan.prepared = PreparedSend.objects.filter(fingerprint=fingerprint, approved_at__isnull=True).first()
    return plan


def needs_second_approver(amounts: Iterable[Decimal]) -> bool:
    """Does a send with these money totals (one per currency) need four eyes?"""
    limit = settings.CREDITS_SECOND_APPROVER_ABOVE
    return bool(limit) and any(amount > limit for amount in amounts)


def send_preview(*, ids: Iterable[int], actor: Any, via: str) -> SendPlan:
    """`send_plan`, logged as shown to `actor`: the confirmation page's (and API's) step."""
    roles.check(actor, "credits.review")
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
    if plan.percent_letters:
        parts.append(f"{plan.percent_letters} percent-of-bill credit(s)")
    parts += [f"{m.currency} {m.amount}" for m in plan.money]
    return ", ".join(parts)


def _confirmed(token: str) -> tuple[list[int], str]:
    """The ids a valid, fresh token confirms and their fingerprint; ValidationError when
    it is not."""
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
    return ids, data["fp"]


def credits_send_confirmed(*, token: str, actor: Any, via: str) -> services.SendSummary:
    """Approve and queue exactly the confirmed notices, and log who did it.

    Above CREDITS_SECOND_APPROVER_ABOVE the first call prepares the send (nothing goes
    out) and only a call by a different Finance user sends it."""
    roles.check(actor, "credits.send")
    try:
        _check_second_approver(send_plan(ids=_confirmed(token)[0]), actor)
    except (ValidationError, PermissionDenied) as exc:
        # Logged outside the send's transaction: the refusal itself must be kept.
        detail = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        audit_record(action=AuditAction.REFUSED, actor=actor, via=via, detail=detail)
        raise
    with transaction.atomic():
        ids = _confirmed(token)[0]
        # Lock first: two Finance users pressing at once prepare (or send) once.
        list(CreditNotice.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk"))
        ids, fingerprint = _confirmed(token)
        notices = list(CreditNotice.objects.filter(pk__in=ids).select_related("customer").order_by("pk"))
        plan = send_plan(ids=ids)
        _check_second_approver(plan, actor)
        prepared_by = ""
        if plan.needs_second_approver:
            if plan.prepared is None:
                return _prepare(plan, fingerprint=fingerprint, actor=actor, via=via)
            prepared_by = _approve_prepared(plan.prepared, actor=actor)
        summary = services.credits_approve_and_send(notices=notices, actor=actor, confirmed=True)
        audit_record_many(
            action=AuditAction.APPROVED, actor=actor, via=via, notices=_approved_entries(notices, prepared_by)
        )
    return summary


def _local(value: datetime) -> str:
    """A time in a message the console shows: in the display zone, the zone named."""
    local = timezone.localtime(value, display_zone())
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def _check_second_approver(plan: SendPlan, actor: Any) -> None:
    """Refuse a four-eyes send by the system, or its approval by the one who prepared it."""
    if not plan.needs_second_approver:
        return
    if actor is None or not getattr(actor, "is_authenticated", False):
        raise PermissionDenied(
            f"Sends above {settings.CREDITS_SECOND_APPROVER_ABOVE} need two named Finance users."
        )
    prepared = plan.prepared
    if prepared is not None and prepared.prepared_by_id == actor.pk:
        raise PermissionDenied(
            f"You prepared this send ({_local(prepared.prepared_at)}); "
            "a different Finance user must approve it. Nothing was sent."
        )


def _prepare(plan: SendPlan, *, fingerprint: str, actor: Any, via: str) -> services.SendSummary:
    summary = _summary_text(plan)
    PreparedSend.objects.create(
        fingerprint=fingerprint,
        notice_ids=[n.pk for n in plan.notices],
        summary=summary[:500],
        prepared_by=actor,
        prepared_label=actor_label(actor),
        prepared_at=timezone.now(),
    )
    audit_record(
        action=AuditAction.PREPARED,
        actor=actor,
        via=via,
        period=_period(plan.notices),
        count=plan.count,
        detail=f"{summary}; waits for a second Finance approver",
    )
    return services.SendSummary(awaiting_approval=True, prepared_by=actor_label(actor))


def _approve_prepared(prepared: PreparedSend, *, actor: Any) -> str:
    """Record the second approver on the preparation; the preparer's name, for the log."""
    prepared.approved_by = actor
    prepared.approved_label = actor_label(actor)
    prepared.approved_at = timezone.now()
    prepared.save(update_fields=["approved_by", "approved_label", "approved_at"])
    return prepared.prepared_label


def _approved_entries(notices: list[CreditNotice], prepared_by: str) -> list[tuple[CreditNotice, str]]:
    entries = []
    prepared = f"; prepared by {prepared_by}" if prepared_by else ""
    for notice in notices:
        amount = f" ({notice.customer.currency} {notice.credit_amount})" if notice.credit_amount else ""
        entries.append(
            (
                notice,
                f"{notice.customer.name}: {notice.credit.normalize():f} {notice.unit}{amount}"
                f" to {', '.join(notice.customer.billing_emails)}{prepared}",
            )
        )
    return entries


def credits_send_requested(
    *, token: str, confirmed: bool, period: str = "", ids: Iterable[int] = (), actor: Any, via: str
) -> services.SendSummary:
    """The API's send: by a confirmation `token`, or without one the notices of `period`
    and/or `ids` when the caller said `confirmed`; refused and logged otherwise. Errors
    name the field at fault (`confirm` or `confirmation`)."""
    roles.check(actor, "credits.send")
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
