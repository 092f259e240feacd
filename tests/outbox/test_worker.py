"""The outbox against the real things: Redis broker, `celery worker` subprocess, SMTP server.

Each test counts what the SMTP server received. "Exactly once" means one message per
Message-ID and every row marked sent.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis

from outbox import services
from outbox.models import AttemptOutcome, DeliveryAttempt, MessageState, OutboundMessage
from tests.outbox.smtp import SmtpSink
from tests.outbox.worker import outage_outlasted_a_budget, running_worker, worker_env
from tests.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def _enqueue_batch(
    n: int, prefix: str = "m", to: Callable[[int], str] | None = None
) -> list[OutboundMessage]:
    return [
        services.email_enqueue(
            key=f"{prefix}-{i}",
            to=[to(i) if to else f"customer{i}@example.com"],
            subject=f"Notice {i}",
            text=f"Body {i}",
        )
        for i in range(n)
    ]


def _states() -> dict[str, str]:
    return dict(OutboundMessage.objects.values_list("idempotency_key", "state"))


def _all_final() -> bool:
    return not OutboundMessage.objects.exclude(state__in=[MessageState.SENT, MessageState.FAILED]).exists()


def _assert_exactly_once(smtp: SmtpSink, messages: list[OutboundMessage]) -> None:
    counts = smtp.handler.counts_by_message_id()
    expected = {m.message_id for m in messages}
    assert set(counts) == expected
    assert all(n == 1 for n in counts.values()), counts
    assert set(OutboundMessage.objects.values_list("state", flat=True)) == {MessageState.SENT}


def test_it_delivers_each_message_exactly_once(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    messages = _enqueue_batch(20)
    # Twenty commits, one task: a task already waiting for the destination covers them.
    assert broker.llen("email") == 1
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        wait_for(
            lambda: len(smtp.handler.snapshot()) >= 20 and _all_final(),
            message=lambda: f"{_states()}\n{worker.log()}",
        )
        worker.settle()  # a sweep and a delivery run after the last send: nothing is sent again
    _assert_exactly_once(smtp, messages)
    # One SMTP session per worker process is reused across messages.
    assert 1 <= smtp.handler.connections <= 20
    assert DeliveryAttempt.objects.filter(outcome=AttemptOutcome.SENT).count() == 20


def test_it_survives_a_sigkill_mid_batch(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    # Each delivery stalls in RCPT, before any of the message is transmitted, so the
    # kill below lands where a lost message would be lost, not where a duplicate is legal.
    smtp.handler.rcpt_delay = 0.6
    messages = _enqueue_batch(12)
    env = worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)
    with running_worker(env, concurrency=1) as worker:
        wait_for(lambda: len(smtp.handler.snapshot()) >= 4, message=lambda: f"{_states()}\n{worker.log()}")
        assert smtp.handler.wait_early_in_rcpt()
        worker.kill()
        received_at_kill = len(smtp.handler.snapshot())
        assert received_at_kill < 12
        # The killed worker's batch: still claimed, leases running; the messages it had
        # sent were marked sent one by one, so only the one it was on can go again.
        stranded = OutboundMessage.objects.filter(state=MessageState.SENDING).count()
        assert 1 <= stranded <= 12 - received_at_kill
        worker.start()
        wait_for(
            lambda: len(smtp.handler.snapshot()) >= 12 and _all_final(),
            timeout=60,
            message=lambda: f"{_states()}\n{worker.log()}",
        )
        worker.settle()
    _assert_exactly_once(smtp, messages)
    lost = DeliveryAttempt.objects.filter(outcome=AttemptOutcome.LOST)
    assert lost.count() == stranded  # the whole claimed remainder, reclaimed after the lease
    assert all(a.message.attempts == 2 for a in lost)


def test_it_delivers_everything_after_redis_loses_the_queue(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    messages = _enqueue_batch(10)
    assert broker.llen("email") == 1
    broker.flushdb()  # Redis restarted with an empty dataset: every queued task is gone
    assert broker.llen("email") == 0
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        # Only the beat-driven sweeper can know about these rows now.
        wait_for(
            lambda: len(smtp.handler.snapshot()) >= 10 and _all_final(),
            message=lambda: f"{_states()}\n{worker.log()}",
        )
        worker.settle()
    _assert_exactly_once(smtp, messages)


def test_it_rides_out_an_smtp_outage_with_bounded_jittered_retries(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink, settings
) -> None:  # type: ignore[no-untyped-def]
    # Sessions answer 451 to MAIL: the server is refusing for now. That spends no
    # attempts (budget 2 here) and trips the breaker, which holds connections down.
    settings.OUTBOX_MAX_ATTEMPTS = 2
    smtp.handler.mail_reply = "451 4.3.0 Temporary local problem, try again later"
    messages = _enqueue_batch(5)
    env = worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)
    with running_worker(env) as worker:
        # The outage lasts until a message has had as many tries as its budget.
        wait_for(outage_outlasted_a_budget, message=worker.log)
        assert smtp.handler.snapshot() == []
        during_outage = smtp.handler.connections
        assert 1 <= during_outage <= 12  # threshold + one probe per cool-down, not per message
        assert not OutboundMessage.objects.filter(state=MessageState.FAILED).exists()
        smtp.handler.mail_reply = None
        wait_for(
            lambda: len(smtp.handler.snapshot()) >= 5 and _all_final(),
            message=lambda: f"{_states()}\n{worker.log()}",
        )
        worker.settle()
    _assert_exactly_once(smtp, messages)
    assert set(OutboundMessage.objects.values_list("attempts", flat=True)) == {1}
    delays = list(
        DeliveryAttempt.objects.filter(outcome=AttemptOutcome.OUTAGE).values_list("retry_delay", flat=True)
    )
    assert delays
    assert all(d is not None and 0 <= d <= 1.0 for d in delays)  # the cap (OUTBOX_RETRY_MAX_DELAY)


def test_it_fails_a_refused_recipient_once_and_delivers_the_rest(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:
    smtp.handler.refuse_rcpt["customer1@example.com"] = "550 5.1.1 Mailbox unavailable"
    messages = _enqueue_batch(3)
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        wait_for(
            lambda: len(smtp.handler.snapshot()) >= 2 and _all_final(),
            message=lambda: f"{_states()}\n{worker.log()}",
        )
        worker.settle()  # a sweep passes: a failed row stays failed
    refused = OutboundMessage.objects.get(idempotency_key="m-1")
    assert refused.state == MessageState.FAILED
    assert refused.attempts == 1
    assert "550" in refused.last_error
    assert DeliveryAttempt.objects.filter(message=refused).count() == 1
    counts = smtp.handler.counts_by_message_id()
    assert set(counts) == {messages[0].message_id, messages[2].message_id}
    assert all(n == 1 for n in counts.values())
