"""After approval: cancelling a notice before it goes out, and the outbox handlers that
mark a notice sent (moving a day credit's term end date exactly once) or failed. See
docs/adr/0007-sla-credits.md."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from core import roles
from credits.models import AuditAction, CreditNotice, Customer, NoticeState
from credits.services._common import OUTBOX_PURPOSE
from credits.services.audit import audit_record, audit_record_many
from outbox import services as outbox
from outbox.models import OutboundMessage


@transaction.atomic
def credits_cancel(
    *, notice: CreditNotice, actor: AbstractBaseUser | None = None, via: str = ""
) -> CreditNotice:
    """Withdraw a notice before it goes out. A queued one is stopped only if still pending."""
    roles.check(actor, "credits.review")
    notice = CreditNotice.objects.select_for_update().get(pk=notice.pk)
    if notice.state in (NoticeState.SENT, NoticeState.CANCELLED):
        raise ValidationError(f"A {notice.get_state_display().lower()} notice cannot be cancelled.")
    if notice.state == NoticeState.QUEUED and notice.message is not None:
        outbox.message_cancel(message=notice.message)  # raises if it is being sent now
    notice.state = NoticeState.CANCELLED
    notice.save(update_fields=["state", "updated_at"])
    audit_record(action=AuditAction.CANCELLED, actor=actor, via=via, notice=notice, count=1)
    return notice


def mark_sent(notice: CreditNotice, message: OutboundMessage, *, extend_term: bool = True) -> None:
    if notice.state == NoticeState.SENT:
        return
    notice.state = NoticeState.SENT
    notice.sent_at = message.sent_at or timezone.now()
    notice.last_error = ""
    fields = ["state", "sent_at", "last_error", "updated_at"]
    if extend_term and notice.unit == CreditNotice.Unit.DAYS and notice.term_extended_at is None:
        customer = Customer.objects.select_for_update().get(pk=notice.customer_id)
        if customer.term_end_date is not None:
            # term_extended_at is the once-only guard: a redelivered handler call finds
            # it set and leaves the date alone.
            customer.term_end_date = customer.term_end_date + timedelta(days=int(notice.credit))
            customer.save(update_fields=["term_end_date", "updated_at"])
            notice.term_extended_at = timezone.now()
            fields.append("term_extended_at")
    notice.save(update_fields=fields)
    audit_record(action=AuditAction.SENT, via="outbox", notice=notice, count=1)


def _on_notice_sent(message: OutboundMessage) -> None:
    notice = CreditNotice.objects.select_for_update().filter(message=message).first()
    if notice is not None:
        mark_sent(notice, message)


def _on_notices_sent(messages: list[OutboundMessage]) -> None:
    """Batch form of `_on_notice_sent`: the same rules, a few statements per batch.

    Locks the notices, then their customers (the order `mark_sent` uses), and moves each
    customer's term once per day-credit notice whose term_extended_at is still empty:
    that field stays the once-only guard. Each notice it marks gets its "Sent" audit
    entry, all in one INSERT; a second call finds them sent and logs nothing (and the
    log's unique "sent" per notice would refuse a second row anyway).
    """
    notices = list(
        CreditNotice.objects.select_for_update()
        .filter(message_id__in={m.pk for m in messages})
        .exclude(state=NoticeState.SENT)
        .order_by("pk")
        .only("pk", "period", "customer_id", "unit", "credit", "term_extended_at", "message_id")
    )
    if not notices:
        return
    now = timezone.now()
    with_term = _extend_terms(notices, now=now)
    CreditNotice.objects.filter(pk__in=[n.pk for n in notices]).update(
        state=NoticeState.SENT,
        sent_at=Subquery(OutboundMessage.objects.filter(pk=OuterRef("message_id")).values("sent_at")[:1]),
        last_error="",
        updated_at=now,
    )
    extended = [n.pk for n in notices if _owes_days(n) and n.customer_id in with_term]
    if extended:
        # The once-only guard, set in the same transaction as the move.
        CreditNotice.objects.filter(pk__in=extended).update(term_extended_at=now)
    audit_record_many(action=AuditAction.SENT, via="outbox", notices=[(n, "") for n in notices])


def _owes_days(notice: CreditNotice) -> bool:
    return notice.unit == CreditNotice.Unit.DAYS and notice.term_extended_at is None


def _extend_terms(notices: list[CreditNotice], *, now: datetime) -> set[int]:
    """Move the term of each customer owed days by `notices`; the customers with a term."""
    day_credits: dict[int, int] = {}
    for notice in notices:
        if _owes_days(notice):
            day_credits[notice.customer_id] = day_credits.get(notice.customer_id, 0) + int(notice.credit)
    # Lock the customers (after the notices, the order mark_sent uses), then move each
    # term once: customers owed the same number of days share one UPDATE.
    with_term = set(
        Customer.objects.select_for_update()
        .filter(pk__in=day_credits, term_end_date__isnull=False)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    by_days: dict[int, list[int]] = {}
    for customer_id, days in day_credits.items():
        if customer_id in with_term:
            by_days.setdefault(days, []).append(customer_id)
    for days, customer_ids in by_days.items():
        Customer.objects.filter(pk__in=customer_ids).update(
            term_end_date=F("term_end_date") + timedelta(days=days), updated_at=now
        )
    return with_term


def _on_notice_failed(message: OutboundMessage) -> None:
    notice = CreditNotice.objects.select_for_update().filter(message=message).first()
    if notice is None or notice.state in (NoticeState.SENT, NoticeState.CANCELLED):
        return
    notice.state = NoticeState.FAILED
    notice.last_error = message.last_error
    notice.save(update_fields=["state", "last_error", "updated_at"])


def register_outbox_handlers() -> None:
    outbox.outbox_register_handler(
        OUTBOX_PURPOSE,
        on_sent=_on_notice_sent,
        on_failed=_on_notice_failed,
        on_sent_batch=_on_notices_sent,
    )
