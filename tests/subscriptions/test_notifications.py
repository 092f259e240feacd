"""Incident notifications to subscribers, delivered to a real SMTP server (aiosmtpd).

Delivery is in-process here (eager tasks, run after each commit); the worker test does
the same through Redis and a `celery worker`.
"""

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
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db


def _open(product: Any, title: str, **kw: Any) -> Incident:
    return services.incident_open(
        title=title,
        impact=Incident.Impact.MAJOR,
        started_at=utc(2026, 1, 24, 13, 2),
        body=kw.pop("body", "We are investigating reports of errors."),
        windows=[
            services.WindowSpec(
                product=product, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=utc(2026, 1, 24, 13, 2)
            )
        ],
        **kw,
    )


def _life_cycle(product: Any, title: str, capture: Any) -> Incident:
    """Open, update, resolve, write and publish the report: four notifiable events."""
    with capture(execute=True):
        incident = _open(product, title)
    with capture(execute=True):
        services.incident_post_update(
            incident=incident,
            status=Incident.Status.IDENTIFIED,
            body="Spam checking is overloaded; <script>alert(1)</script> **mitigating**.",
            display_at=utc(2026, 1, 24, 14, 0),
        )
    with capture(execute=True):
        services.incident_resolve(incident=incident, resolved_at=utc(2026, 1, 24, 17, 55), body="Recovered.")
    with capture(execute=True):
        services.report_save(incident=incident, summary="Overload of the spam checking service.")
        approve_report(incident)
        services.report_publish(incident=incident, published_at=utc(2026, 2, 9, 5, 3))
    return incident


def _by_recipient(smtp: SmtpSink) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for received in smtp.handler.snapshot():
        for rcpt in received.rcpt_tos:
            out.setdefault(rcpt, []).append(received.message)
    return out


def test_it_sends_a_gmail_subscriber_exactly_the_gmail_events(
    smtp: SmtpSink, gmail, cloud_storage, django_capture_on_commit_callbacks
) -> None:
    make_subscriber("gmail-fan@example.com", products=[gmail])
    make_subscriber("storage-fan@example.com", products=[cloud_storage])
    make_subscriber("everything@example.com")
    make_subscriber("pending@example.com", products=[gmail], confirmed=False)

    gmail_incident = _life_cycle(gmail, "Gmail spam checking failures", django_capture_on_commit_callbacks)
    _life_cycle(
        cloud_storage, "Cloud Storage elevated errors in us-central1", django_capture_on_commit_callbacks
    )

    got = _by_recipient(smtp)
    subjects = [m["Subject"] for m in got["gmail-fan@example.com"]]
    assert subjects == [
        "[Status] Investigating: Gmail spam checking failures",
        "[Status] Identified: Gmail spam checking failures",
        "[Status] Resolved: Gmail spam checking failures",
        "[Status] Incident report: Gmail spam checking failures",
    ]
    assert len(got["storage-fan@example.com"]) == 4
    assert all("Cloud Storage" in m["Subject"] for m in got["storage-fan@example.com"])
    assert len(got["everything@example.com"]) == 8
    assert "pending@example.com" not in got  # never confirmed: nothing at all
    # Exactly once: one message per Message-ID, and every outbox row sent.
    assert all(n == 1 for n in smtp.handler.counts_by_message_id().values())
    assert len(smtp.handler.snapshot()) == 16
    assert set(OutboundMessage.objects.values_list("state", flat=True)) == {"sent"}

    update_mail = got["gmail-fan@example.com"][1]
    text = update_mail.get_body(preferencelist=("plain",)).get_content()
    html = update_mail.get_body(preferencelist=("html",)).get_content()
    assert "Spam checking is overloaded" in text
    assert f"http://testserver/incidents/{gmail_incident.public_id}/" in text
    assert "Affected products: Gmail" in text
    # Markdown rendered and sanitised in the HTML part; no markup from the author runs.
    assert "<strong>mitigating</strong>" in html
    assert "<script>" not in html
    assert update_mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert update_mail["List-Unsubscribe"].strip().startswith("<http://testserver/unsubscribe/")
    assert update_mail["Auto-Submitted"] == "auto-generated"
    assert "gmail-fan" not in update_mail["List-Unsubscribe"]


def test_it_respects_the_notify_flag_and_visibility(
    smtp: SmtpSink, gmail, django_capture_on_commit_callbacks
) -> None:
    make_subscriber("gmail-fan@example.com", products=[gmail])
    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail, "Quiet incident", notify=False)
        services.incident_post_update(
            incident=incident, status=Incident.Status.MONITORING, body="Typo fix.", notify=False
        )
        _open(gmail, "Staff-only incident", is_public=False)
    assert smtp.handler.snapshot() == []
    assert not OutboundMessage.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        services.incident_post_update(
            incident=incident, status=Incident.Status.MONITORING, body="A fix is rolling out."
        )
    assert [m.message["Subject"] for m in smtp.handler.snapshot()] == ["[Status] Monitoring: Quiet incident"]


def test_it_sends_nothing_more_after_one_click_unsubscribe(
    smtp: SmtpSink, gmail, django_capture_on_commit_callbacks
) -> None:
    subscriber = make_subscriber("leaver@example.com", products=[gmail])
    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail, "Gmail delivery delays")
    [first] = smtp.handler.snapshot()
    header = first.message["List-Unsubscribe"].strip()
    url = header.strip("<>").replace("http://testserver", "")

    # What a mail client does for RFC 8058: POST the fixed body, no cookies, no CSRF.
    mail_client = Client(enforce_csrf_checks=True)
    response = mail_client.post(
        url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200
    assert not Subscriber.objects.filter(pk=subscriber.pk).exists()

    with django_capture_on_commit_callbacks(execute=True):
        services.incident_post_update(incident=incident, status=Incident.Status.IDENTIFIED, body="Found it.")
        services.incident_resolve(incident=incident, body="Fixed.")
    assert len(smtp.handler.snapshot()) == 1


def test_it_notifies_once_per_event(gmail, django_capture_on_commit_callbacks) -> None:
    from subscriptions import notifications

    make_subscriber("gmail-fan@example.com", products=[gmail])
    with django_capture_on_commit_callbacks(execute=True):
        incident = _open(gmail, "Gmail outage")
    update = incident.updates.get()
    # The hook running again for the same update (a retried request, a replayed
    # call) queues nothing new: the idempotency key is per update and subscriber.
    with django_capture_on_commit_callbacks(execute=True):
        notifications.incident_event(kind="opened", incident=incident, update=update)
    assert OutboundMessage.objects.count() == 1
    row = OutboundMessage.objects.get()
    subscriber = Subscriber.objects.get()
    assert row.idempotency_key == f"notify:{update.pk}:{subscriber.pk}"


def test_it_rolls_back_notifications_with_the_change(gmail) -> None:
    make_subscriber("gmail-fan@example.com", products=[gmail])
    incident = _open(gmail, "Gmail outage")
    before = OutboundMessage.objects.count()
    with pytest.raises(Exception):  # noqa: B017 - any validation error will do
        services.incident_post_update(incident=incident, status="not-a-status", body="x")
    assert OutboundMessage.objects.count() == before


def test_it_renders_template_syntax_in_titles_literally(
    smtp: SmtpSink, gmail, django_capture_on_commit_callbacks
) -> None:
    make_subscriber("gmail-fan@example.com", products=[gmail])
    with django_capture_on_commit_callbacks(execute=True):
        _open(gmail, "{{ settings.SECRET_KEY }} {% load static %}", body="{{ settings.SECRET_KEY }}")
    [received] = smtp.handler.snapshot()
    raw = received.raw.decode(errors="replace")
    assert "{{ settings.SECRET_KEY }}" in received.message["Subject"]
    assert "test-only-secret-key" not in raw
