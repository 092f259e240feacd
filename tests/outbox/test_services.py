"""The outbox with a real SMTP server in the test process and tasks run in process."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from outbox import services
from outbox.models import AttemptOutcome, DeliveryAttempt, MessageState, OutboundMessage
from tests.outbox.smtp import BlackHole, SmtpSink, run_sink
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db


def _enqueue(key: str = "k1", **kw: Any) -> OutboundMessage:
    params: dict[str, Any] = {
        "key": key,
        "to": ["ops@example.com"],
        "subject": "Your SLA credit",
        "text": "Plain text body",
        "html": "<p>HTML body</p>",
        "purpose": "test",
        "ref": "ref:1",
    }
    params.update(kw)
    return services.email_enqueue(**params)


@pytest.fixture
def recorded() -> Iterator[dict[str, list[int]]]:
    calls: dict[str, list[int]] = {"sent": [], "failed": []}
    services.outbox_register_handler(
        "test",
        on_sent=lambda m: calls["sent"].append(m.pk),
        on_failed=lambda m: calls["failed"].append(m.pk),
    )
    yield calls
    services.handlers._handlers.pop("test", None)


def test_it_delivers_once_after_commit_with_stable_message_id(
    smtp: SmtpSink, recorded, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        message = _enqueue()
        assert smtp.handler.snapshot() == []  # nothing leaves before the commit
    assert len(callbacks) == 1
    received = smtp.handler.wait_for(1)
    assert len(received) == 1
    message.refresh_from_db()
    assert message.state == MessageState.SENT
    assert message.sent_at is not None
    assert message.attempts == 1
    digest = hashlib.sha256(b"k1").hexdigest()[:32]
    assert message.message_id == f"<{digest}@{settings.EMAIL_MESSAGE_ID_DOMAIN}>"
    got = received[0]
    assert got.message_id == message.message_id
    assert got.rcpt_tos == ["ops@example.com"]
    assert str(got.message["Subject"]) == "Your SLA credit"
    assert got.message.get_body(("plain",)).get_content().strip() == "Plain text body"  # type: ignore[union-attr]
    assert "<p>HTML body</p>" in got.message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert recorded == {"sent": [message.pk], "failed": []}
    assert list(DeliveryAttempt.objects.values_list("outcome", flat=True)) == [AttemptOutcome.SENT]

    # Same key again: the same row, nothing new queued or sent.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        again = _enqueue(subject="Something else")
    assert again.pk == message.pk
    assert callbacks == []
    assert OutboundMessage.objects.count() == 1
    # In-process delivery is synchronous: with no callback run, nothing more was sent.
    assert len(smtp.handler.snapshot()) == 1


def test_it_sends_nothing_when_the_callers_transaction_rolls_back(
    smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    class Boom(Exception):
        pass

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Boom),
        transaction.atomic(),
    ):
        _enqueue()
        raise Boom
    assert callbacks == []
    assert OutboundMessage.objects.count() == 0
    assert smtp.handler.snapshot() == []


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"subject": "Credit\r\nBcc: victim@example.com"}, "subject"),
        ({"subject": "Credit\nX-Evil: 1"}, "subject"),
        ({"to": ["ops@example.com\r\nBcc: victim@example.com"]}, "to"),
        ({"to": ["ops@example.com, victim@example.com"]}, "to"),
        ({"to": ["Ops <ops@example.com>"]}, "to"),
        ({"to": ["not-an-address"]}, "to"),
        ({"to": []}, "to"),
        ({"to": "ops@example.com"}, "to"),
        ({"headers": {"X-Ref": "a\r\nBcc: victim@example.com"}}, "headers"),
        ({"headers": {"Bcc": "victim@example.com"}}, "headers"),
        ({"headers": {"X Bad": "1"}}, "headers"),
        ({"headers": {"Message-ID": "<forged@example.com>"}}, "headers"),
        ({"text": "  "}, "text"),
    ],
)
def test_it_refuses_header_injection_and_bad_input(kw: dict[str, Any], field: str, smtp: SmtpSink) -> None:
    with pytest.raises(ValidationError) as excinfo:
        _enqueue(**kw)
    assert field in excinfo.value.message_dict
    assert OutboundMessage.objects.count() == 0
    assert smtp.handler.snapshot() == []


def test_it_keeps_allowed_headers_and_adds_no_other(
    smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        _enqueue(headers={"List-Unsubscribe": "<https://status.example/u/abc>", "X-Notice": "42"})
    got = smtp.handler.wait_for(1)[0]
    assert got.message["List-Unsubscribe"] == "<https://status.example/u/abc>"
    assert got.message["X-Notice"] == "42"
    assert "bcc" not in got.header_names
    assert got.header_names.count("to") == 1


def test_it_fails_at_once_on_550_and_tells_the_handler(
    smtp: SmtpSink, recorded, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    smtp.handler.refuse_rcpt["gone@example.com"] = "550 5.1.1 No such user"
    with django_capture_on_commit_callbacks(execute=True):
        message = _enqueue(to=["gone@example.com"])
    message.refresh_from_db()
    assert message.state == MessageState.FAILED
    assert message.attempts == 1
    assert "550" in message.last_error
    assert smtp.handler.snapshot() == []
    assert recorded == {"sent": [], "failed": [message.pk]}
    attempt = DeliveryAttempt.objects.get(message=message)
    assert (attempt.outcome, attempt.status_code, attempt.retry_delay) == (
        AttemptOutcome.PERMANENT,
        550,
        None,
    )


def test_it_retries_a_greylisted_recipient_with_jittered_backoff_then_delivers_once(
    smtp: SmtpSink, recorded, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_RETRY_BASE_DELAY = 0.02
    settings.OUTBOX_RETRY_MAX_DELAY = 0.05
    # A 4xx about this recipient (not the server): the message's own attempts count.
    smtp.handler.refuse_rcpt["ops@example.com"] = "451 4.7.1 Greylisted, try again later"
    with django_capture_on_commit_callbacks(execute=True):
        message = _enqueue()
    message.refresh_from_db()
    assert message.state == MessageState.PENDING
    assert "451" in message.last_error
    assert message.next_attempt_at > message.updated_at - timedelta(seconds=1)
    # In-process mode has no worker to hold a countdown: the task does not loop.
    assert message.attempts == 1
    due = OutboundMessage.objects.filter(pk=message.pk, next_attempt_at__lte=Now())
    for _ in range(2):
        wait_for(due.exists)  # the back-off ran out
        services.message_deliver(message_id=message.pk)
    smtp.handler.refuse_rcpt.clear()
    wait_for(due.exists)
    services.message_deliver(message_id=message.pk)
    message.refresh_from_db()
    assert message.state == MessageState.SENT
    assert message.attempts == 4
    assert len(smtp.handler.snapshot()) == 1
    assert recorded == {"sent": [message.pk], "failed": []}
    delays = list(
        DeliveryAttempt.objects.filter(message=message, outcome=AttemptOutcome.TRANSIENT).values_list(
            "retry_delay", flat=True
        )
    )
    assert len(delays) == 3
    assert all(d is not None and 0 <= d <= 0.05 for d in delays)


def test_it_gives_up_on_a_recipient_after_the_budget(
    smtp: SmtpSink, recorded, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_MAX_ATTEMPTS = 3
    settings.OUTBOX_RETRY_BASE_DELAY = 0.0
    settings.OUTBOX_RETRY_MAX_DELAY = 0.0
    smtp.handler.refuse_rcpt["ops@example.com"] = "450 4.2.1 Mailbox busy"
    with django_capture_on_commit_callbacks(execute=True):
        message = _enqueue()
    for _ in range(10):  # a storm of redeliveries is absorbed by the claim
        services.message_deliver(message_id=message.pk)
    message.refresh_from_db()
    assert message.state == MessageState.FAILED
    assert message.attempts == 3
    assert "gave up after 3 attempts" in message.last_error
    assert smtp.handler.mail_commands == 3
    assert recorded["failed"] == [message.pk]


def test_it_holds_messages_through_an_outage_behind_the_breaker_then_resumes(
    smtp: SmtpSink, recorded, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from outbox.models import Destination

    settings.OUTBOX_MAX_ATTEMPTS = 2
    settings.OUTBOX_RETRY_BASE_DELAY = 0.0
    settings.OUTBOX_RETRY_MAX_DELAY = 0.0
    settings.OUTBOX_BREAKER_THRESHOLD = 3
    settings.OUTBOX_BREAKER_COOLDOWN = 60  # the cool-down is ended by hand below
    settings.OUTBOX_BREAKER_MAX_COOLDOWN = 60
    smtp.handler.mail_reply = "421 4.7.0 Service not available"
    with django_capture_on_commit_callbacks(execute=True):
        messages = [_enqueue(f"out-{i}") for i in range(5)]
    # Many more tries than the budget of 2: an outage spends no attempts, and once the
    # breaker is open nothing connects at all.
    for _ in range(20):
        for message in messages:
            services.message_deliver(message_id=message.pk)
    assert smtp.handler.connections == 3  # the threshold, then the breaker holds
    breaker = Destination.objects.get(key="smtp")
    assert breaker.state == "open"
    assert "421" in breaker.last_error
    for message in messages:
        message.refresh_from_db()
        assert (message.state, message.attempts) == (MessageState.PENDING, 0)
    outage = DeliveryAttempt.objects.filter(outcome=AttemptOutcome.OUTAGE)
    assert outage.count() == 3
    # The mail server comes back; after the cool-down one probe goes, then the rest.
    smtp.handler.mail_reply = None
    services.outbox_sweep()
    assert smtp.handler.connections == 3  # still cooling down: the sweep queued nothing
    Destination.objects.update(open_until=timezone.now() - timedelta(seconds=1))
    services.outbox_sweep()
    assert set(OutboundMessage.objects.values_list("state", flat=True)) == {MessageState.SENT}
    assert smtp.handler.counts_by_message_id() == {m.message_id: 1 for m in messages}
    assert Destination.objects.get(key="smtp").state == "closed"
    assert sorted(recorded["sent"]) == sorted(m.pk for m in messages)


def test_it_gives_up_on_an_outage_by_age_not_by_count(
    smtp: SmtpSink, recorded, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_GIVE_UP_DAYS = 2
    smtp.handler.mail_reply = "451 4.3.0 Try again later"
    young = _enqueue("young")
    old = _enqueue("old")
    OutboundMessage.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=2, minutes=1))
    services.message_deliver(message_id=young.pk)
    services.message_deliver(message_id=old.pk)
    young.refresh_from_db()
    old.refresh_from_db()
    assert (young.state, young.attempts) == (MessageState.PENDING, 0)
    assert old.state == MessageState.FAILED
    assert "gave up after 2 days" in old.last_error
    assert recorded["failed"] == [old.pk]


def test_it_reuses_one_smtp_session_and_reconnects_when_the_server_closed_it(
    smtp: SmtpSink, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from outbox import delivery

    delivery.close_cached_connection()
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            _enqueue(f"reuse-{i}")
    assert len(smtp.handler.snapshot()) == 3
    assert smtp.handler.connections == 1  # one session for three messages

    # The server drops idle sessions: the next message reconnects at once, no attempt lost.
    for sink in run_sink(timeout=0.2):
        settings.EMAIL_PORT = sink.port
        with django_capture_on_commit_callbacks(execute=True):
            _enqueue("idle-1")
        # The server timed the session out (the lambda runs within this iteration).
        wait_for(lambda: sink.handler.disconnections >= 1)  # noqa: B023
        with django_capture_on_commit_callbacks(execute=True):
            late = _enqueue("idle-2")
        late.refresh_from_db()
        assert late.state == MessageState.SENT
        assert late.attempts == 1
        assert len(sink.handler.snapshot()) == 2
        assert sink.handler.connections == 2


def test_it_lets_only_one_claim_win() -> None:
    message = _enqueue()
    first = services.message_claim(message_id=message.pk)
    second = services.message_claim(message_id=message.pk)
    assert first is not None
    assert second is None
    message.refresh_from_db()
    assert message.state == MessageState.SENDING
    assert message.attempts == 1
    assert message.lease_expires_at is not None


def test_it_backs_off_exponentially_with_full_jitter_under_the_cap(settings) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_RETRY_BASE_DELAY = 10
    settings.OUTBOX_RETRY_MAX_DELAY = 300
    rng = random.Random(7)
    for attempt, ceiling in [(1, 10), (2, 20), (3, 40), (6, 300), (20, 300)]:
        samples = [services.backoff_delay(attempt, rng=rng) for _ in range(200)]
        assert all(0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling * 0.8  # spread over the whole window
        assert len(set(samples)) == 200


def test_it_sweeps_lost_enqueues_expired_leases_and_exhausted_rows(
    smtp: SmtpSink, recorded, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_SWEEP_GRACE_SECONDS = 60
    now = timezone.now()
    # Committed but never enqueued (the web process died after commit).
    lost = _enqueue("lost")
    OutboundMessage.objects.filter(pk=lost.pk).update(next_attempt_at=now - timedelta(minutes=5))
    # Just enqueued: its task is presumably in flight, leave it alone.
    fresh = _enqueue("fresh")
    # Claimed by a worker that was killed: lease ran out.
    crashed = _enqueue("crashed")
    assert services.message_claim(message_id=crashed.pk) is not None
    OutboundMessage.objects.filter(pk=crashed.pk).update(lease_expires_at=now - timedelta(seconds=1))
    # Kills its worker every time: no attempts left.
    poison = _enqueue("poison")
    OutboundMessage.objects.filter(pk=poison.pk).update(
        state=MessageState.SENDING, attempts=8, max_attempts=8, lease_expires_at=now - timedelta(seconds=1)
    )

    result = services.outbox_sweep(now=now)

    # In-process mode delivers the destination's due rows at once, the fresh one too (with
    # a broker, a task already waiting for the destination makes the sweep add none).
    assert (result.requeued, result.reclaimed, result.failed) == (1, 1, 1)
    states = dict(OutboundMessage.objects.values_list("idempotency_key", "state"))
    assert states == {
        "lost": MessageState.SENT,
        "fresh": MessageState.SENT,
        "crashed": MessageState.SENT,
        "poison": MessageState.FAILED,
    }
    assert sorted(recorded["sent"]) == sorted([lost.pk, fresh.pk, crashed.pk])
    assert recorded["failed"] == [poison.pk]
    assert len(smtp.handler.snapshot()) == 3


def test_it_keeps_a_message_sent_when_the_handler_breaks(
    smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    def broken(message: OutboundMessage) -> None:
        OutboundMessage.objects.filter(pk=message.pk).update(ref="changed-by-handler")
        raise RuntimeError("handler bug")

    services.outbox_register_handler("broken", on_sent=broken)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            message = _enqueue(purpose="broken")
    finally:
        services.handlers._handlers.pop("broken", None)
    message.refresh_from_db()
    assert message.state == MessageState.SENT  # never sent twice because of a handler bug
    assert message.ref == "ref:1"  # the handler's partial work was rolled back
    assert "on_sent handler failed" in message.last_error
    assert len(smtp.handler.snapshot()) == 1


def test_it_retries_and_cancels_from_staff_actions(
    smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    smtp.handler.refuse_rcpt["gone@example.com"] = "550 5.1.1 No such user"
    with django_capture_on_commit_callbacks(execute=True):
        failed = _enqueue("a", to=["gone@example.com"])
    smtp.handler.refuse_rcpt.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.message_retry(message=failed)
    failed.refresh_from_db()
    assert failed.state == MessageState.SENT
    assert failed.attempts == 2

    pending = _enqueue("b")  # not committed-and-run: still pending
    services.message_cancel(message=pending)
    pending.refresh_from_db()
    assert pending.state == MessageState.CANCELLED
    assert services.message_claim(message_id=pending.pk) is None
    with pytest.raises(ValidationError):
        services.message_cancel(message=failed)


def test_it_shows_failed_messages_to_staff_only(
    smtp: SmtpSink, client, staff_client, bob, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    smtp.handler.refuse_rcpt["gone@example.com"] = "550 5.1.1 No such user"
    with django_capture_on_commit_callbacks(execute=True):
        message = _enqueue(to=["gone@example.com"])
    response = staff_client.get("/admin/outbox/outboundmessage/?state__exact=failed")
    assert response.status_code == 200
    assert b"550 5.1.1 No such user" in response.content
    detail = staff_client.get(f"/admin/outbox/outboundmessage/{message.pk}/change/")
    assert detail.status_code == 200
    assert b"permanent" in detail.content.lower()
    client.force_login(bob)
    assert client.get("/admin/outbox/outboundmessage/").status_code == 302


# --- Webhooks ------------------------------------------------------------------------------


class _Receiver(BaseHTTPRequestHandler):
    requests: list[tuple[dict[str, str], bytes]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).requests.append((dict(self.headers), body))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver(settings) -> Iterator[type[_Receiver]]:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE = True
    handler = type("Receiver", (_Receiver,), {"requests": [], "status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/hook"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


def test_it_posts_signed_webhooks(receiver, recorded, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        message = services.webhook_enqueue(
            key="w1",
            url=receiver.url,
            payload={"event": "incident.resolved", "id": 3},
            secret="s3cret",
            purpose="test",
        )
    message.refresh_from_db()
    assert message.state == MessageState.SENT
    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    assert json.loads(body) == {"event": "incident.resolved", "id": 3}
    timestamp = headers["X-Status-Timestamp"]
    expected = hmac.new(b"s3cret", f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert headers["X-Status-Signature"] == f"sha256={expected}"
    assert abs(int(timestamp) - int(time.time())) < 60
    assert DeliveryAttempt.objects.get(message=message).status_code == 200
    assert recorded["sent"] == [message.pk]


@pytest.mark.parametrize(
    "status, state", [(503, MessageState.PENDING), (429, MessageState.PENDING), (410, MessageState.FAILED)]
)
def test_it_classifies_webhook_answers(
    receiver, status: int, state: str, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    receiver.status = status
    with django_capture_on_commit_callbacks(execute=True):
        message = services.webhook_enqueue(key="w", url=receiver.url, payload={}, secret="s")
    message.refresh_from_db()
    assert message.state == state
    assert f"HTTP {status}" in message.last_error
    assert DeliveryAttempt.objects.get(message=message).status_code == status


def test_it_refuses_private_webhook_targets_unless_allowed(
    settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with django_capture_on_commit_callbacks(execute=True):
        message = services.webhook_enqueue(key="p", url="http://127.0.0.1:9/hook", payload={}, secret="s")
    message.refresh_from_db()
    assert message.state == MessageState.FAILED
    assert "private or loopback" in message.last_error


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "javascript:alert(1)", "http://user:pw@example.com/", "http://exa\r\nmple.com/"],
)
def test_it_refuses_bad_webhook_urls(url: str) -> None:
    with pytest.raises(ValidationError):
        services.webhook_enqueue(key="u", url=url, payload={}, secret="s")
    assert OutboundMessage.objects.count() == 0


def test_it_commits_quickly_and_leaves_delivery_to_the_sweeper_when_the_broker_is_down(  # type: ignore[no-untyped-def]
    smtp: SmtpSink, settings, django_capture_on_commit_callbacks
) -> None:
    from statuspage.celery import app

    saved = (app.conf.broker_url, app.conf.task_always_eager, app.conf.broker_transport_options)
    down = BlackHole().__enter__()  # a broker that takes connections and never answers
    app.conf.broker_url = f"redis://127.0.0.1:{down.port}/0"  # type: ignore[misc]
    app.conf.task_always_eager = False
    app.conf.broker_transport_options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None  # type: ignore[attr-defined]
    services.kicks._broker_down_until = 0.0
    try:
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            for i in range(30):
                _enqueue(f"down-{i}")
        wait_for(lambda: down.accepted)
    finally:
        app.conf.broker_url, app.conf.task_always_eager, app.conf.broker_transport_options = saved  # type: ignore[misc]
        app._pool = None  # type: ignore[attr-defined]
        app.amqp._producer_pool = None  # type: ignore[attr-defined]
        services.kicks._broker_down_until = 0.0
        down.__exit__()
    assert len(down.accepted) == 1, down.accepted  # one short try, not thirty
    assert OutboundMessage.objects.filter(state=MessageState.PENDING).count() == 30
    assert smtp.handler.snapshot() == []
    # The broker is back (here: in-process execution); the sweeper delivers every row.
    OutboundMessage.objects.update(next_attempt_at=timezone.now() - timedelta(minutes=5))  # a while later
    result = services.outbox_sweep()
    assert result.requeued == 30
    assert set(OutboundMessage.objects.values_list("state", flat=True)) == {MessageState.SENT}
    assert len(smtp.handler.snapshot()) == 30


def test_it_refuses_retry_caps_near_the_visibility_timeout(settings) -> None:  # type: ignore[no-untyped-def]
    from outbox.checks import check_retry_cap

    assert check_retry_cap() == []
    settings.OUTBOX_RETRY_MAX_DELAY = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    settings.OUTBOX_LEASE_SECONDS = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert [e.id for e in check_retry_cap()] == ["outbox.E001", "outbox.E002"]


def test_it_lets_staff_confirm_or_retry_a_message_under_review(
    smtp: SmtpSink, recorded, staff_client, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.OUTBOX_RETRY_BASE_DELAY = 0
    settings.OUTBOX_RETRY_MAX_DELAY = 0
    smtp.handler.drop_after_data = True
    with django_capture_on_commit_callbacks(execute=True):
        first = _enqueue("amb-1")
        second = _enqueue("amb-2")
    for _ in range(3):  # the one resend each, then nothing more
        services.outbox_sweep()
    first.refresh_from_db()
    assert (first.state, first.ambiguous_count) == (MessageState.REVIEW, 2)
    assert smtp.handler.counts_by_message_id()[first.message_id] == 2
    listing = staff_client.get("/admin/outbox/outboundmessage/?state__exact=review")
    assert listing.status_code == 200 and b"amb-1" not in listing.content
    response = staff_client.post(
        "/admin/outbox/outboundmessage/",
        {"action": "confirm_delivered", "_selected_action": [first.pk]},
    )
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.state == MessageState.SENT
    assert recorded["sent"] == [first.pk]
    smtp.handler.drop_after_data = False
    with django_capture_on_commit_callbacks(execute=True):
        services.message_retry(message=second)
    second.refresh_from_db()
    assert second.state == MessageState.SENT
    assert smtp.handler.counts_by_message_id()[second.message_id] == 3
