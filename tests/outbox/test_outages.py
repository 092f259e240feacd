"""Long outages and hangs, with the real things: Redis, `celery worker` subprocesses,
PostgreSQL, an SMTP server that refuses, drops or hangs, a Redis that never answers.

The promise under test: every message arrives once (or, when the server may have it, at
most twice and then shown to staff), with no staff action, while connection attempts and
the broker queue stay bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import redis
from django.db.models import Min
from django.test import Client
from django.utils import timezone

from outbox import services
from outbox.models import AttemptOutcome, DeliveryAttempt, Destination, MessageState, OutboundMessage
from tests.outbox.smtp import BlackHole, SmtpSink
from tests.outbox.worker import FAST, running_worker, worker_env
from tests.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

QUEUES = ("email", "webhooks", "periodic")
SOCKET_TIMEOUT = 40
LONG_SOCKET_TIMEOUTS = {"socket_timeout": SOCKET_TIMEOUT, "socket_connect_timeout": SOCKET_TIMEOUT}


def _states() -> dict[str, int]:
    out: dict[str, int] = {}
    for state in OutboundMessage.objects.values_list("state", flat=True):
        out[state] = out.get(state, 0) + 1
    return out


class QueueWatch:
    """Samples the broker's queue lengths in the background; keeps the maximum."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            total = 0
            for queue in QUEUES:
                total += int(self.client.llen(queue))  # type: ignore[arg-type]  # sync client
            self.peak = max(self.peak, total)

    def __enter__(self) -> QueueWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)


def _outage_outlasted_the_retry_schedule() -> bool:
    """Longer than a message's whole retry schedule has passed since the first refusal."""
    schedule = timedelta(seconds=int(FAST["OUTBOX_MAX_ATTEMPTS"]) * float(FAST["OUTBOX_RETRY_MAX_DELAY"]))
    first = DeliveryAttempt.objects.filter(outcome=AttemptOutcome.OUTAGE).aggregate(at=Min("started_at"))[
        "at"
    ]
    return first is not None and timezone.now() - first > schedule


def _enqueue(n: int, prefix: str = "m") -> list[OutboundMessage]:
    return [
        services.email_enqueue(
            key=f"{prefix}-{i}", to=[f"customer{i}@example.com"], subject=f"Notice {i}", text=f"Body {i}"
        )
        for i in range(n)
    ]


def test_it_rides_out_an_outage_longer_than_the_retry_schedule_and_delivers_once(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink
) -> None:  # type: ignore[no-untyped-def]
    # The worker's budget is 6 attempts with delays capped at 1 s (tests/outbox/worker.py):
    # counted per message as before, an outage longer than 6 s would have failed all 40.
    smtp.handler.mail_reply = "421 4.3.2 Service not available, closing channel"
    messages = _enqueue(40)
    env = worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)
    with running_worker(env) as worker, QueueWatch(broker) as watch:
        wait_for(_outage_outlasted_the_retry_schedule, message=worker.log)
        during = smtp.handler.connections
        assert smtp.handler.snapshot() == []
        # Pending (one may be out as the breaker's probe just now); none failed.
        assert set(_states()) <= {MessageState.PENDING, MessageState.SENDING}, worker.log()
        breaker = Destination.objects.get(key="smtp")
        assert breaker.state in ("open", "half_open")
        # Threshold (3), then one probe per cool-down (0.5 s doubling to 1.5 s): a handful,
        # not 40 messages x 6 attempts.
        assert 3 <= during <= 16, during
        smtp.handler.mail_reply = None  # the mail server is back
        wait_for(lambda: _states() == {MessageState.SENT: 40}, message=lambda: f"{_states()}\n{worker.log()}")
        worker.settle()  # a sweep and a delivery run after the last send: nothing is sent again
    counts = smtp.handler.counts_by_message_id()
    assert counts == {m.message_id: 1 for m in messages}
    # Never more than a task per destination plus the periodic ones in the broker.
    assert watch.peak <= 5, watch.peak
    # The outage cost no attempts: each message was counted once, when it went out.
    assert set(OutboundMessage.objects.values_list("attempts", flat=True)) == {1}
    assert DeliveryAttempt.objects.filter(outcome=AttemptOutcome.OUTAGE).count() == during
    assert Destination.objects.get(key="smtp").state == "closed"


def test_it_sends_at_most_two_copies_when_the_server_drops_after_data_and_flags_them(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink, staff_client: Client
) -> None:  # type: ignore[no-untyped-def]
    smtp.handler.drop_after_data = True
    messages = _enqueue(3, prefix="drop")
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        wait_for(
            lambda: _states() == {MessageState.REVIEW: 3}, message=lambda: f"{_states()}\n{worker.log()}"
        )
        worker.settle()  # a sweep and a delivery run after that: nothing is resent from review
    counts = smtp.handler.counts_by_message_id()
    assert counts == {m.message_id: 2 for m in messages}  # the one resend, same Message-ID
    for row in OutboundMessage.objects.all():
        assert row.ambiguous_count == 2
        assert "may have been delivered" in row.last_error
    assert DeliveryAttempt.objects.filter(outcome=AttemptOutcome.AMBIGUOUS).count() == 6
    page = staff_client.get("/admin/outbox/outboundmessage/?state__exact=review")
    assert page.status_code == 200
    assert b"Needs review" in page.content and b"drop-0" not in page.content  # keys are not listed
    assert page.content.count(b"customer0@example.com") >= 1


def test_it_answers_the_resolve_request_quickly_when_redis_hangs_then_delivers_once(
    postgres, broker: redis.Redis, outbox_redis_url: str, smtp: SmtpSink, staff_client: Client, settings
) -> None:  # type: ignore[no-untyped-def]
    from incidents import services as incidents
    from incidents.models import ImpactWindow, Incident
    from statuspage.celery import app
    from tests.builders import make_product
    from tests.subscriptions.builders import make_subscriber

    gmail = make_product("Gmail")
    for i in range(50):
        make_subscriber(f"fan{i}@example.com", products=[gmail])
    with BlackHole() as hung:
        # This process (the web process) publishes to a Redis that accepts connections
        # and never answers; the worker later uses the real one. The app-wide socket
        # timeouts are made long, so that a request that waited on them could not pass.
        app.conf.broker_url = f"redis://127.0.0.1:{hung.port}/0"  # type: ignore[misc]
        app.conf.broker_transport_options = {
            **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
            **LONG_SOCKET_TIMEOUTS,
        }
        app._pool = None  # type: ignore[attr-defined]
        app.amqp._producer_pool = None  # type: ignore[attr-defined]
        services.kicks._broker_down_until = 0.0
        try:
            started = time.monotonic()
            at = timezone.now() - timedelta(minutes=5)
            incident = incidents.incident_open(
                title="Gmail unavailable",
                impact=Incident.Impact.MAJOR,
                started_at=at,
                windows=[
                    incidents.WindowSpec(product=gmail, level=ImpactWindow.Level.MAJOR_OUTAGE, started_at=at)
                ],
            )
            opened_in = time.monotonic() - started
            wait_for(lambda: len(hung.accepted) >= 1)  # it did try the hung broker
            services.kicks._broker_down_until = 0.0  # the resolve pays its own try, no free pass
            started = time.monotonic()
            response = staff_client.post(
                f"/api/v1/incidents/{incident.public_id}/resolve/",
                {"body": "Recovered."},
                content_type="application/json",
            )
            resolved_in = time.monotonic() - started
            wait_for(lambda: len(hung.accepted) >= 2)
        finally:
            services.kicks._broker_down_until = 0.0
    assert response.status_code == 200, response.content
    # Generous bounds, far under the app-wide timeouts that a request must not wait on.
    assert opened_in < SOCKET_TIMEOUT / 4, opened_in
    assert resolved_in < SOCKET_TIMEOUT / 4, resolved_in
    assert OutboundMessage.objects.count() == 0  # the fan-out waits for a worker
    assert smtp.handler.snapshot() == []
    # Redis is back (the worker's); the periodic sweeps find the events and the rows.
    with running_worker(worker_env(redis_url=outbox_redis_url, smtp_port=smtp.port)) as worker:
        wait_for(
            lambda: _states() == {MessageState.SENT: 100},
            timeout=60,
            message=lambda: f"{_states()}\n{worker.log()}",
        )
        worker.settle("subscriptions.tasks.notification_events_resume")
    counts = smtp.handler.counts_by_message_id()
    assert len(counts) == 100 and set(counts.values()) == {1}


class _Hook(BaseHTTPRequestHandler):
    requests: list[bytes] = []

    def do_POST(self) -> None:
        type(self).requests.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook_receiver(settings) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE = True
    handler = type("Hook", (_Hook,), {"requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/hook"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


def test_it_delivers_a_webhook_while_the_mail_server_hangs(
    postgres, broker: redis.Redis, outbox_redis_url: str, hook_receiver: Any
) -> None:  # type: ignore[no-untyped-def]
    with BlackHole() as hung_smtp:
        # A long EMAIL_TIMEOUT: the email worker stays stuck for the whole test.
        env = worker_env(
            redis_url=outbox_redis_url,
            smtp_port=hung_smtp.port,
            WEBHOOK_ALLOW_PRIVATE="1",
            EMAIL_TIMEOUT="60",
        )
        # As in docker/docker-compose.yml: a worker per queue.
        with (
            running_worker(env, queues="email", beat=False, concurrency=1, name="email") as mail_worker,
            running_worker(env, queues="webhooks,periodic", name="other") as other_worker,
        ):
            stuck = _enqueue(5, prefix="stuck")
            wait_for(lambda: hung_smtp.accepted, message=mail_worker.log)  # the email worker now waits
            services.webhook_enqueue(key="hook-1", url=hook_receiver.url, payload={"event": "x"}, secret="s")
            hook = OutboundMessage.objects.filter(idempotency_key="hook-1")
            wait_for(
                lambda: hook.filter(state=MessageState.SENT).exists(),
                message=lambda: f"{mail_worker.log()}\n{other_worker.log()}",
            )
            assert len(hook_receiver.requests) == 1
            # The order of events: the webhook went out while the email worker was still on
            # its first, unanswered attempt, which a shared queue would have waited for.
            assert (
                not DeliveryAttempt.objects.filter(message__in=stuck)
                .exclude(outcome=AttemptOutcome.STARTED)
                .exists()
            )
            assert not OutboundMessage.objects.filter(channel="email", state=MessageState.SENT).exists()
            mail_worker.kill()  # no warm shutdown: its task would wait out EMAIL_TIMEOUT
