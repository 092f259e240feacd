"""Issue 28, finance: the audit log records "Sent" once per notice whichever outbox hook
marks it (one message, a batch, a redelivered call); the CSV export never shows an unsent
notice a claim deadline already past; the review totals never add percentages of
different customers' bills."""

from __future__ import annotations

import csv
import io
from datetime import date, timedelta
from decimal import Decimal as D
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from credits import exports, selectors, services
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState
from credits.services import delivery
from credits.services.audit import audit_record_many
from outbox.models import MessageState, OutboundMessage
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders
from tests.outbox.smtp import SmtpSink

pytestmark = pytest.mark.django_db


def _gmail_notices(n: int) -> list[CreditNotice]:
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15))
    policy = builders.workspace_policy()
    for i in range(n):
        builders.customer(f"Customer {i}", policy=policy, products=[(gmail, None)])
    services.credits_compute(period="2009-09")
    return list(CreditNotice.objects.order_by("pk"))


def _sent_entries() -> list[int | None]:
    return sorted(
        CreditAuditEntry.objects.filter(action=AuditAction.SENT).values_list("notice_id", flat=True),
        key=lambda pk: pk or 0,
    )


def test_it_logs_sent_once_per_notice_when_a_batch_is_delivered(
    smtp: SmtpSink, django_capture_on_commit_callbacks: Any
) -> None:
    notices = _gmail_notices(3)
    with django_capture_on_commit_callbacks(execute=True):
        services.credits_approve_and_send(confirmed=True, notices=notices)
    smtp.handler.wait_for(3)
    assert set(CreditNotice.objects.values_list("state", flat=True)) == {NoticeState.SENT}
    assert _sent_entries() == [n.pk for n in notices]
    entry = CreditAuditEntry.objects.filter(action=AuditAction.SENT).first()
    assert entry is not None and (entry.via, entry.period, entry.count) == ("outbox", "2009-09", 1)


def test_the_batch_hook_logs_sent_once_even_when_it_runs_twice() -> None:
    notices = _gmail_notices(3)
    services.credits_approve_and_send(confirmed=True, notices=notices)
    messages = list(OutboundMessage.objects.order_by("pk"))
    OutboundMessage.objects.update(state=MessageState.SENT, sent_at=timezone.now())
    messages = list(OutboundMessage.objects.order_by("pk"))

    delivery._on_notices_sent(messages)
    delivery._on_notices_sent(messages)  # redelivered
    for message in messages:
        delivery._on_notice_sent(message)  # and the one-by-one fallback on top

    assert set(CreditNotice.objects.values_list("state", flat=True)) == {NoticeState.SENT}
    assert _sent_entries() == [n.pk for n in notices]
    page = selectors.audit_entries(period="2009-09")
    assert sum(1 for e in page if e.get_action_display() == "Sent") == 3


def test_the_log_itself_refuses_a_second_sent_row_for_a_notice() -> None:
    notice = _gmail_notices(1)[0]
    assert audit_record_many(action=AuditAction.SENT, via="outbox", notices=[(notice, "")]) == 1
    assert audit_record_many(action=AuditAction.SENT, via="outbox", notices=[(notice, "again")]) == 0
    assert _sent_entries() == [notice.pk]


# --- The CSV's claim deadline ---------------------------------------------------------------


def _rows(notices: list[CreditNotice]) -> dict[str, dict[str, str]]:
    reader = csv.DictReader(io.StringIO(exports.notices_csv(notices)))
    return {row["customer"]: row for row in reader}


def test_the_export_gives_unsent_notices_the_deadline_they_would_be_sent_with() -> None:
    _gmail_notices(4)
    computed, queued, cancelled, sent = CreditNotice.objects.select_related("policy", "customer").order_by(
        "pk"
    )
    # The stored deadline of a computed notice is provisional and long past (2009).
    assert computed.claim_deadline < date.today()
    services.credits_approve_and_send(confirmed=True, notices=[queued, sent])
    services.credits_cancel(notice=cancelled)
    sent_message = OutboundMessage.objects.get(credit_notice__pk=sent.pk)
    OutboundMessage.objects.filter(pk=sent_message.pk).update(state=MessageState.SENT, sent_at=timezone.now())
    delivery._on_notice_sent(OutboundMessage.objects.get(pk=sent_message.pk))

    today = timezone.now().astimezone(ZoneInfo("US/Pacific")).date()
    rows = _rows(list(selectors.notices_filtered(period="2009-09")))
    assert rows[computed.customer.name]["claim_deadline"] == (today + timedelta(days=30)).isoformat()
    assert rows[cancelled.customer.name]["claim_deadline"] == ""  # no letter, nothing to claim by
    for notice in (queued, sent):
        notice.refresh_from_db()
        assert rows[notice.customer.name]["claim_deadline"] == notice.claim_deadline.isoformat()
        assert notice.claim_deadline >= today  # the letter's own, counted from its sending day
    assert rows[sent.customer.name]["state"] == NoticeState.SENT
    for row in rows.values():
        assert row["claim_deadline"] == "" or date.fromisoformat(row["claim_deadline"]) >= today


# --- Review totals -------------------------------------------------------------------------


def test_totals_add_money_per_currency_never_percentages() -> None:
    storage, central = make_product("Cloud Storage"), make_location("us-central1")
    incident = make_incident(
        product=storage, location=central, start=utc(2026, 10, 8, 12, 0), end=utc(2026, 10, 9, 2, 0)
    )
    assert incident.pk
    policy = builders.storage_policy()
    for name, bill, currency in (
        ("Acme", D("1000.00"), "USD"),
        ("Globex", D("3000.00"), "USD"),
        ("Initech", D("2000.00"), "EUR"),
        ("Hooli", None, "USD"),
    ):
        customer = builders.customer(name, policy=policy, products=[(storage, central)], monthly_bill=bill)
        customer.currency = currency
        customer.save(update_fields=["currency"])
    services.credits_compute(period="2026-10")
    notices = list(selectors.notices_filtered(period="2026-10"))
    assert len(notices) == 4 and {n.credit for n in notices} == {D("25.00")}
    totals = {t.currency: t for t in selectors.notice_totals(notices)}
    assert set(totals) == {"EUR", "USD"}
    assert (totals["USD"].count, totals["USD"].amount, totals["USD"].without_amount) == (3, D("1000.00"), 1)
    assert (totals["EUR"].count, totals["EUR"].amount) == (1, D("500.00"))
    assert all(t.days is None for t in totals.values())  # and no sum of percentages anywhere
    assert not hasattr(totals["USD"], "credit")
