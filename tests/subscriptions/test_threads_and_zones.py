"""Notification emails threaded per incident and subscriber (In-Reply-To / References),
and written in each subscriber's own time zone; delivered to a real SMTP server."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from core.timezones import clean_zone, zone_names
from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import OutboundMessage
from subscriptions import emails
from subscriptions.models import NotificationEvent, Subscriber
from tests.builders import utc
from tests.outbox.smtp import SmtpSink
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _site(settings: Any) -> None:
    settings.DISPLAY_TIME_ZONE = "UTC"
    settings.EMAIL_MESSAGE_ID_DOMAIN = "status.example.com"


def _zoned(email: str, zone: str, **kw: Any) -> Subscriber:
    subscriber = make_subscriber(email, **kw)
    Subscriber.objects.filter(pk=subscriber.pk).update(time_zone=zone)
    subscriber.refresh_from_db()
    return subscriber


def _incident(product: Any, title: str, capture: Any) -> Incident:
    """Opened at 14:05 UTC, updated at 15:00, resolved at 17:55: three emails each."""
    with capture(execute=True):
        incident = services.incident_open(
            title=title,
            impact=Incident.Impact.MAJOR,
            started_at=utc(2026, 12, 1, 14, 5),
            body="Looking into it.",
            windows=[
                services.WindowSpec(
                    product=product,
                    level=ImpactWindow.Level.PARTIAL_OUTAGE,
                    started_at=utc(2026, 12, 1, 14, 5),
                )
            ],
        )
    with capture(execute=True):
        services.incident_post_update(
            incident=incident,
            status=Incident.Status.IDENTIFIED,
            body="Found it.",
            display_at=utc(2026, 12, 1, 15),
        )
    with capture(execute=True):
        services.incident_resolve(incident=incident, resolved_at=utc(2026, 12, 1, 17, 55), body="Fixed.")
    return incident


def _received(smtp: SmtpSink, to: str) -> list[Any]:
    return [r.message for r in smtp.handler.snapshot() if to in r.rcpt_tos]


def test_it_threads_every_email_of_one_incident_to_one_subscriber(
    smtp: SmtpSink, gmail, django_capture_on_commit_callbacks
) -> None:
    erin = make_subscriber("erin@example.com")
    make_subscriber("frank@example.com")
    first = _incident(gmail, "Gmail delivery delays", django_capture_on_commit_callbacks)
    second = _incident(gmail, "Gmail login errors", django_capture_on_commit_callbacks)

    mails = _received(smtp, "erin@example.com")
    assert len(mails) == 6
    by_incident = {
        first.public_id: [m for m in mails if "delivery delays" in m["Subject"]],
        second.public_id: [m for m in mails if "login errors" in m["Subject"]],
    }
    roots = set()
    for public_id, thread in by_incident.items():
        assert len(thread) == 3
        (root,) = {m["In-Reply-To"] for m in thread}
        assert {m["References"] for m in thread} == {root}
        # One id per incident and subscriber, derived: the incident's public id, a digest
        # of the subscriber's token (not its id or address), the Message-ID domain.
        assert root == emails.thread_headers(incident_public_id=public_id, subscriber=erin)["In-Reply-To"]
        assert root.startswith(f"<incident-{public_id}.") and root.endswith("@status.example.com>")
        assert "erin" not in root and f".{erin.pk}@" not in root
        # Each email keeps its own Message-ID, none of them the thread's id.
        assert len({m["Message-ID"] for m in thread}) == 3 and root not in {m["Message-ID"] for m in thread}
        roots.add(root)
    assert len(roots) == 2  # another incident, another thread
    # Another subscriber's copy of the same incident threads under its own id.
    frank_roots = {m["In-Reply-To"] for m in _received(smtp, "frank@example.com")}
    assert len(frank_roots) == 2 and not frank_roots & roots
    # The outbox rows carry the headers (a re-delivery sends the same ones).
    assert all(
        row.headers["References"] == row.headers["In-Reply-To"]
        for row in OutboundMessage.objects.filter(purpose=emails.SUBSCRIBER_PURPOSE)
    )


def test_it_writes_times_in_each_subscribers_zone(
    smtp: SmtpSink, gmail, django_capture_on_commit_callbacks
) -> None:
    _zoned("paris@example.com", "Europe/Paris")
    _zoned("tokyo@example.com", "Asia/Tokyo")
    make_subscriber("default@example.com")  # no zone stored: the display zone (UTC here)
    _incident(gmail, "Gmail delivery delays", django_capture_on_commit_callbacks)

    def resolved_mail(to: str) -> tuple[str, str]:
        (mail,) = [m for m in _received(smtp, to) if "Resolved" in m["Subject"]]
        # SMTP lines end in CRLF.
        return (
            mail.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n"),
            mail.get_body(preferencelist=("html",)).get_content(),
        )

    text, html = resolved_mail("paris@example.com")
    assert "Started: 2026-12-01 15:05 CET\nResolved: 2026-12-01 18:55 CET\n" in text
    assert "Resolved (2026-12-01 18:55 CET):\nFixed." in text
    assert ">Started</td><td>2026-12-01 15:05 CET</td>" in html
    text, html = resolved_mail("tokyo@example.com")
    # Past midnight in Tokyo: the date moves too.
    assert "Started: 2026-12-01 23:05 JST\nResolved: 2026-12-02 02:55 JST\n" in text
    assert ">Resolved</td><td>2026-12-02 02:55 JST</td>" in html
    text, _html = resolved_mail("default@example.com")
    assert "Started: 2026-12-01 14:05 UTC\nResolved: 2026-12-01 17:55 UTC\n" in text


def test_it_renders_a_fan_out_once_per_language_and_zone(
    gmail, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    for i in range(3):
        _zoned(f"paris{i}@example.com", "Europe/Paris")
        make_subscriber(f"utc{i}@example.com")
    french = _zoned("amelie@example.com", "Europe/Paris")
    Subscriber.objects.filter(pk=french.pk).update(language="fr")
    renders: list[tuple[str | None, str | None]] = []
    render_email = emails.render_email

    def counting(
        name: str, context: dict[str, Any], *, language: str | None = None, zone: str | None = None
    ) -> Any:
        renders.append((language, zone))
        return render_email(name, context, language=language, zone=zone)

    monkeypatch.setattr(emails, "render_email", counting)
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_open(
            title="Gmail delivery delays",
            impact=Incident.Impact.MAJOR,
            started_at=utc(2026, 12, 1, 14, 5),
            body="Looking into it.",
            windows=[
                services.WindowSpec(
                    product=gmail, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=utc(2026, 12, 1, 14, 5)
                )
            ],
        )
    assert NotificationEvent.objects.get().recipients == 7
    assert sorted(renders) == [("en", "Europe/Paris"), ("en", "UTC"), ("fr", "Europe/Paris")]


def test_a_shared_render_refuses_a_subscriber_of_another_zone(gmail) -> None:
    paris = _zoned("paris@example.com", "Europe/Paris")
    shared = emails.SubscriberTemplate.render("subscription_known", {}, language="en", zone="UTC")
    with pytest.raises(ValueError):
        shared.spec_for(subscriber=paris, key="k")


def test_the_zones_offered_are_iana_places_utc_and_the_display_zone(settings: Any) -> None:
    settings.DISPLAY_TIME_ZONE = "US/Pacific"  # a legacy alias, still the default offered
    names = zone_names()
    assert {"Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC", "US/Pacific"} <= set(names)
    # Not the POSIX offsets (their signs read backwards) nor other legacy aliases.
    assert not {"Etc/GMT+5", "GB", "Canada/Eastern"} & set(names)
    assert clean_zone("Europe/Paris") == "Europe/Paris"
    for bad in ("Etc/GMT+5", "Mars/Olympus_Mons", "", None, "Europe/Paris\n"):
        with pytest.raises(ValidationError) as refused:
            clean_zone(bad)
        assert "time_zone" in refused.value.message_dict
