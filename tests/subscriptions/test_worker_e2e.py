"""End to end with the real things: PostgreSQL, Redis (db 13 by default), a `celery worker`
subprocess with beat, an aiosmtpd SMTP server and an HTTP webhook receiver."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from tests.builders import approve_report, utc
from tests.outbox.smtp import SmtpSink
from tests.outbox.worker import running_worker, worker_env
from tests.subscriptions.builders import make_subscriber
from tests.subscriptions.conftest import WebhookReceiver
from tests.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def _open(product: Any, title: str) -> Incident:
    return services.incident_open(
        title=title,
        impact=Incident.Impact.MAJOR,
        started_at=utc(2026, 1, 24, 13, 2),
        windows=[
            services.WindowSpec(
                product=product, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=utc(2026, 1, 24, 13, 2)
            )
        ],
    )


def _settled() -> bool:
    return not OutboundMessage.objects.exclude(state__in=["sent", "failed", "cancelled"]).exists()


def test_it_delivers_subscriber_events_through_the_worker(
    postgres: None,
    broker: Any,
    subs_redis_url: str,
    smtp: SmtpSink,
    webhook_receiver: WebhookReceiver,
    gmail: Any,
    cloud_storage: Any,
) -> None:
    fan = make_subscriber("gmail-fan@example.com", products=[gmail])
    make_subscriber("pending@example.com", products=[gmail], confirmed=False)
    hook = make_subscriber(
        "owner@example.com", kind=Subscriber.Kind.WEBHOOK, url=webhook_receiver.url, products=[gmail]
    )
    webhook_receiver.script = [500]  # the first webhook try fails; the retry gets through

    # Each service call commits; its outbox rows are published to Redis after the commit.
    incident = _open(gmail, "Gmail spam checking failures")
    services.incident_post_update(
        incident=incident, status=Incident.Status.IDENTIFIED, body="Found the cause."
    )
    services.incident_resolve(incident=incident, body="Recovered.")
    services.report_save(incident=incident, summary="An overloaded backend caused retries to cascade.")
    approve_report(incident)
    services.report_publish(incident=incident)
    _open(cloud_storage, "Cloud Storage errors in us-central1")
    # One expansion task per event (4, none for the incident nobody follows); the
    # outbox rows are written by those tasks, after the staff transactions.
    assert broker.llen("periodic") == 4
    assert OutboundMessage.objects.count() == 0

    env = worker_env(redis_url=subs_redis_url, smtp_port=smtp.port, WEBHOOK_ALLOW_PRIVATE="1")
    with running_worker(env) as worker:
        wait_for(lambda: len(smtp.handler.snapshot()) >= 4 and _settled(), message=worker.log)
        wait_for(
            lambda: OutboundMessage.objects.filter(channel="webhook", state="sent").count() == 4,
            message=worker.log,
        )

        subjects = [m.message["Subject"] for m in smtp.handler.snapshot()]
        assert sorted(subjects) == sorted(
            [
                "[Status] Investigating: Gmail spam checking failures",
                "[Status] Identified: Gmail spam checking failures",
                "[Status] Resolved: Gmail spam checking failures",
                "[Status] Incident report: Gmail spam checking failures",
            ]
        )
        assert {r for m in smtp.handler.snapshot() for r in m.rcpt_tos} == {"gmail-fan@example.com"}
        assert all(n == 1 for n in smtp.handler.counts_by_message_id().values())
        events = sorted(r.json["meta"]["event"] for r in webhook_receiver.requests if r.json)
        # Five requests: one event was tried twice (500, then 200).
        assert len(webhook_receiver.requests) == 5
        assert sorted(set(events)) == [
            "incident.opened",
            "incident.report_published",
            "incident.resolved",
            "incident.updated",
        ]

        # One-click unsubscribe with the link from a delivered email; nothing more arrives.
        header = smtp.handler.snapshot()[0].message["List-Unsubscribe"].strip()
        response = Client(enforce_csrf_checks=True).post(
            header.strip("<>").replace("http://testserver", ""),
            "List-Unsubscribe=One-Click",
            content_type="application/x-www-form-urlencoded",
        )
        assert response.status_code == 200
        assert not Subscriber.objects.filter(pk=fan.pk).exists()
        second = _open(gmail, "Gmail delivery delays")
        wait_for(lambda: len(webhook_receiver.requests) >= 6 and _settled(), message=worker.log)
        # The fan-out resumer and a sweep run after that: still nothing for the unsubscribed address.
        worker.settle("subscriptions.tasks.notification_events_resume")
    assert len(smtp.handler.snapshot()) == 4
    assert webhook_receiver.requests[-1].json["incident"]["id"] == second.public_id
    assert Subscriber.objects.get(pk=hook.pk).failure_count == 0
