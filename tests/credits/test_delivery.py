"""Issue 5 acceptance: credit notices delivered through a real Redis broker, a real
`celery worker` subprocess and a real SMTP server in this process, counting what the
server received."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
import redis

from credits import services
from credits.models import CreditNotice, Customer, NoticeState
from outbox.models import AttemptOutcome, DeliveryAttempt, OutboundMessage
from tests.builders import make_incident, make_product, utc
from tests.credits import builders
from tests.outbox.smtp import SmtpSink
from tests.outbox.worker import outage_outlasted_a_budget, running_worker, worker_env
from tests.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
TERM = date(2010, 1, 31)


def _computed_notices(n: int) -> list[CreditNotice]:
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15))
    policy = builders.workspace_policy()
    for i in range(n):
        builders.customer(f"Customer {i:02d}", policy=policy, products=[(gmail, None)], term_end_date=TERM)
    summary = services.credits_compute(period="2009-09")
    assert summary.created == n
    return list(CreditNotice.objects.order_by("pk"))


def _settled() -> bool:
    return not CreditNotice.objects.filter(state=NoticeState.QUEUED).exists()


def _assert_each_notice_received_once(smtp: SmtpSink, n: int) -> None:
    notices = list(CreditNotice.objects.select_related("customer"))
    counts = smtp.handler.counts_by_message_id()
    assert set(counts) == {notice.email_message_id for notice in notices}
    assert all(c == 1 for c in counts.values()), counts
    assert {notice.state for notice in notices} == {NoticeState.SENT}
    # The day credit moved each term end date exactly once.
    assert set(Customer.objects.values_list("term_end_date", flat=True)) == {TERM + timedelta(days=3)}
    assert all(notice.term_extended_at is not None for notice in notices)
    by_rcpt = {m.rcpt_tos[0] for m in smtp.handler.snapshot()}
    assert by_rcpt == {c.billing_emails[0] for c in Customer.objects.all()}
    assert len(notices) == n


def test_it_delivers_each_approved_notice_exactly_once(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    _computed_notices(15)
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        summary = services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
        assert summary.queued == 15
        wait_for(_settled, message=worker.log)
        # Approving again while the worker and the sweeper run sends nothing more.
        assert (
            services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all()).skipped
            == 15
        )
        worker.settle()
    _assert_each_notice_received_once(smtp, 15)
    assert OutboundMessage.objects.count() == 15


def test_it_loses_and_doubles_nothing_when_the_worker_is_killed_mid_batch(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    # Each SMTP session stalls in RCPT (before any message data), so the kill below hits
    # a worker in the middle of a send without the server having accepted that message.
    smtp.handler.rcpt_delay = 0.6
    _computed_notices(10)
    services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port), concurrency=1) as worker:
        wait_for(lambda: len(smtp.handler.snapshot()) >= 3, message=worker.log)
        assert smtp.handler.wait_early_in_rcpt()
        worker.kill()
        assert len(smtp.handler.snapshot()) < 10
        assert CreditNotice.objects.filter(state=NoticeState.QUEUED).exists()
        worker.start()
        wait_for(_settled, timeout=60, message=worker.log)
        worker.settle()
    _assert_each_notice_received_once(smtp, 10)
    # The killed worker's claimed batch came back after its lease (at least the one it
    # was sending); the notices it had sent were marked sent one by one and not resent.
    assert DeliveryAttempt.objects.filter(outcome=AttemptOutcome.LOST).count() >= 1


def test_it_delivers_queued_notices_after_redis_comes_back_empty(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    _computed_notices(8)
    services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    assert broker.llen("email") == 1  # one task for the destination, not one per notice
    broker.flushdb()  # what a Redis restarted without its data looks like to us
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        wait_for(_settled, message=worker.log)
        worker.settle()
    _assert_each_notice_received_once(smtp, 8)


def test_it_delivers_once_after_an_smtp_451_spell_without_spending_the_budget(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_MAX_ATTEMPTS = 2  # stamped on the rows queued by this process
    # The server refuses MAIL with 451: an outage of the server, not of a notice. It
    # spends none of the (small) budget, and the breaker bounds the connections.
    smtp.handler.mail_reply = "451 4.3.0 Try again later"
    _computed_notices(4)
    services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        # The outage lasts until a notice's message has had as many tries as its budget.
        wait_for(outage_outlasted_a_budget, message=worker.log)
        assert smtp.handler.snapshot() == []
        assert 1 <= smtp.handler.connections <= 10
        assert set(CreditNotice.objects.values_list("state", flat=True)) == {NoticeState.QUEUED}
        smtp.handler.mail_reply = None
        wait_for(_settled, message=worker.log)
        worker.settle()
    _assert_each_notice_received_once(smtp, 4)
    assert set(OutboundMessage.objects.values_list("attempts", flat=True)) == {1}
    delays = list(
        DeliveryAttempt.objects.filter(outcome=AttemptOutcome.OUTAGE).values_list("retry_delay", flat=True)
    )
    assert delays
    assert all(d is not None and 0 <= d <= 1.0 for d in delays)


def test_it_fails_a_refused_recipient_once_and_shows_it_to_staff(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink, staff_client
) -> None:  # type: ignore[no-untyped-def]
    _computed_notices(3)
    refused = Customer.objects.get(name="Customer 01")
    smtp.handler.refuse_rcpt[refused.billing_emails[0]] = "550 5.1.1 Recipient address rejected"
    services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        wait_for(_settled, message=worker.log)
        worker.settle()  # a sweep passes; a failed notice is not retried
    failed = CreditNotice.objects.get(customer=refused)
    assert failed.state == NoticeState.FAILED
    assert "550" in failed.last_error
    assert failed.message is not None and failed.message.attempts == 1
    assert DeliveryAttempt.objects.filter(message=failed.message).count() == 1
    refused.refresh_from_db()
    assert refused.term_end_date == TERM  # nothing applied for an undelivered notice
    assert len(smtp.handler.snapshot()) == 2
    assert failed.email_message_id not in smtp.handler.counts_by_message_id()
    page = staff_client.get("/admin/credits/creditnotice/?state__exact=failed")
    assert page.status_code == 200
    assert b"Customer 01" in page.content and b"550 5.1.1 Recipient address rejected" in page.content
