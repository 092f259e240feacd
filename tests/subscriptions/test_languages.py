"""Each subscriber's emails in their language: the subscribe page's language is stored,
the manage page, the admin and the API change it, and every email (and chat message)
is written in it, rendered once per language in a fan-out."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import translation
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import OutboundMessage
from subscriptions import channels, emails, notifications
from subscriptions import services as subscription_services
from subscriptions.models import NotificationEvent, Subscriber
from subscriptions.tokens import Purpose, make_token
from tests.api.keys import key_for
from tests.builders import make_location, utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db

NBSP = "\u00a0"


@pytest.fixture(autouse=True)
def _site(settings: Any) -> None:
    settings.SITE_NAME = "Acme"
    settings.DISPLAY_TIME_ZONE = "UTC"


def _fr(text: str) -> str:
    """French puts a no-break space before a colon."""
    return text.replace(" :", NBSP + ":")


def _email(to: str, key_prefix: str) -> OutboundMessage:
    return OutboundMessage.objects.get(to=[to], idempotency_key__startswith=key_prefix)


def _open(product: Any, capture: Any) -> Incident:
    with capture(execute=True):
        return services.incident_open(
            title="Gmail delivery delays",
            impact=Incident.Impact.MAJOR,
            started_at=utc(2026, 12, 1, 14, 5),
            first_update_at=utc(2026, 12, 1, 14, 5),  # shown at the start, as staff chose
            body="We are looking into it.",
            windows=[
                services.WindowSpec(
                    product=product,
                    level=ImpactWindow.Level.PARTIAL_OUTAGE,
                    started_at=utc(2026, 12, 1, 14, 5),
                    location=make_location("europe-west1"),
                )
            ],
        )


def test_it_confirms_a_french_subscriber_in_french_and_an_english_one_in_english(
    django_capture_on_commit_callbacks,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        subscription_services.subscriber_request(email="amelie@example.com", language="fr")
        # A French request (or task) sending an English subscriber's email: still English.
        with translation.override("fr"):
            subscription_services.subscriber_request(email="erin@example.com", language="en")

    french = _email("amelie@example.com", "subscription-confirm:")
    assert french.subject == "Confirmez votre abonnement à État d’Acme"
    assert "Quelqu’un, probablement vous, a demandé à recevoir les notifications" in french.body_text
    assert "Le lien est valable 7 jours." in french.body_text
    assert "\nhttp://testserver/fr/subscribe/confirm/" in french.body_text
    assert french.headers["List-Unsubscribe"].startswith("<http://testserver/fr/unsubscribe/")
    assert '<html lang="fr">' in french.body_html
    assert "Confirmer l’abonnement</a>" in french.body_html
    assert "Confirm subscription" not in french.body_text + french.body_html
    assert "The link works" not in french.body_text + french.body_html

    english = _email("erin@example.com", "subscription-confirm:")
    assert english.subject == "Confirm your subscription to Acme status"
    assert "The link works for 7 days. Nothing will be sent until you confirm." in english.body_text
    assert "\nhttp://testserver/subscribe/confirm/" in english.body_text
    assert english.headers["List-Unsubscribe"].startswith("<http://testserver/unsubscribe/")
    assert '<html lang="en">' in english.body_html
    assert "Confirm subscription</a>" in english.body_html


def test_it_notifies_each_subscriber_in_their_language(gmail, django_capture_on_commit_callbacks) -> None:
    amelie = make_subscriber("amelie@example.com")
    Subscriber.objects.filter(pk=amelie.pk).update(language="fr")
    make_subscriber("erin@example.com")
    _open(gmail, django_capture_on_commit_callbacks)

    french = _email("amelie@example.com", "notify:")
    # (A subject's whitespace is collapsed to plain spaces, no-break ones too.)
    assert french.subject == "[Acme] Analyse en cours : Gmail delivery delays"
    text = french.body_text
    assert text.startswith(
        _fr("Nouvel incident : Gmail delivery delays\nÉtat : Analyse en cours · Impact : Majeur\n")
    )
    assert (
        _fr("Produits concernés : Gmail\nRégions : europe-west1\nDébut : 1er déc. 2026 à 14:05 UTC\n") in text
    )
    assert _fr("Analyse en cours (1er déc. 2026 à 14:05 UTC) :\nWe are looking into it.") in text
    assert "Vous recevez ce message parce que amelie@example.com est abonné" in text
    html = french.body_html
    assert '<html lang="fr">' in html
    assert ">État</td><td>Analyse en cours</td>" in html
    assert ">Début</td><td>1er déc. 2026 à 14:05 UTC</td>" in html
    assert "Voir sur la page d’état</a>" in html
    assert "Se désabonner</a>" in html
    # Its link to the incident opens the French page; the English subscriber's, the bare one.
    public_id = Incident.objects.get().public_id
    assert _fr(f"Détails : http://testserver/fr/incidents/{public_id}/") in text
    assert f'href="http://testserver/fr/incidents/{public_id}/"' in html

    english = _email("erin@example.com", "notify:")
    assert english.subject == "[Acme] Investigating: Gmail delivery delays"
    assert english.body_text.startswith(
        "New incident: Gmail delivery delays\nStatus: Investigating · Impact: Major\n"
        "Affected products: Gmail\nRegions: europe-west1\nStarted: 2026-12-01 14:05 UTC\n"
    )
    assert ">Started</td><td>2026-12-01 14:05 UTC</td>" in english.body_html
    assert "View on the status page</a>" in english.body_html
    assert f"Details: http://testserver/incidents/{public_id}/" in english.body_text
    assert "/fr/" not in english.body_text


def test_it_renders_a_fan_out_once_per_language(
    gmail, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    for i in range(3):
        make_subscriber(f"en{i}@example.com")
        french = make_subscriber(f"fr{i}@example.com")
        Subscriber.objects.filter(pk=french.pk).update(language="fr")
    renders: list[str | None] = []
    render_email = emails.render_email

    def counting(
        name: str, context: dict[str, Any], *, language: str | None = None, zone: str | None = None
    ) -> Any:
        renders.append(language)
        return render_email(name, context, language=language, zone=zone)

    monkeypatch.setattr(emails, "render_email", counting)
    with freeze_time("2026-12-01 15:00:00"):  # the signed links carry the time
        _open(gmail, django_capture_on_commit_callbacks)
        assert NotificationEvent.objects.get().recipients == 6
        assert sorted(r or "" for r in renders) == ["en", "fr"]  # two bodies for six subscribers

        # Each filled-in copy is byte for byte what a render for that subscriber gives.
        event = NotificationEvent.objects.get()
        incident = Incident.objects.get()
        message = notifications.build_event_message(
            event=notifications.Event.INCIDENT_OPENED,
            key=event.key,
            incident=incident,
            products=[gmail],
            update=incident.updates.get(),
        )
        for subscriber in Subscriber.objects.all():
            links = emails.subscriber_links(subscriber)
            expected = render_email(
                "subscription_notification",
                {**message.context, **links, "subscriber": subscriber},
                language=subscriber.language,
                zone=subscriber.zone,
            )
            row = _email(subscriber.email, "notify:")
            assert (row.subject, row.body_text, row.body_html) == (
                expected.subject,
                expected.text,
                expected.html,
            )
    assert OutboundMessage.objects.filter(subject__contains="Analyse en cours").count() == 3


def test_it_refuses_to_fill_a_render_for_another_language(gmail) -> None:
    subscriber = make_subscriber("amelie@example.com")
    Subscriber.objects.filter(pk=subscriber.pk).update(language="fr")
    subscriber.refresh_from_db()
    shared = emails.SubscriberTemplate.render("subscription_known", {}, language="en")
    with pytest.raises(ValueError):
        shared.spec_for(subscriber=subscriber, key="k")


def test_it_writes_slack_messages_in_the_channels_language(gmail) -> None:
    slack = make_subscriber(
        "ops@example.com", kind=Subscriber.Kind.SLACK, url="https://hooks.slack.com/services/T/B/X"
    )
    Subscriber.objects.filter(pk=slack.pk).update(language="fr")
    slack.refresh_from_db()
    incident = services.incident_open(
        title="Gmail delivery delays",
        started_at=utc(2026, 12, 1, 14, 5),
        windows=[
            services.WindowSpec(
                product=gmail, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=utc(2026, 12, 1, 14, 5)
            )
        ],
        notify=False,
    )
    message = notifications.build_event_message(
        event=notifications.Event.INCIDENT_OPENED, key="k", incident=incident, products=[gmail]
    )
    payload = channels.payload_for(slack, message)
    assert payload["text"] == _fr("Nouvel incident : Gmail delivery delays")
    fields = [f["text"] for f in payload["blocks"][1]["fields"]]
    assert "*État*\nAnalyse en cours" in fields
    assert "*Début*\n1er déc. 2026 à 14:05 UTC" in fields
    button = next(b for b in payload["blocks"] if b["type"] == "actions")["elements"][0]
    assert button["url"] == f"http://testserver/fr/incidents/{incident.public_id}/"
    # The JSON payloads keep the page's one canonical address.
    assert message.payload["incident"]["shortlink"] == f"http://testserver/incidents/{incident.public_id}/"


def test_it_stores_the_language_of_the_subscribe_page(
    client: Client, django_capture_on_commit_callbacks
) -> None:
    def subscribe(path: str, email: str) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(path, {"kind": "email", "email": email, "scope": "all"})
        assert response.status_code == 302

    # The page's language is the one its path gives: French under /fr/.
    subscribe("/fr/subscribe/", "amelie@example.com")
    subscribe("/subscribe/", "erin@example.com")
    stored = dict(Subscriber.objects.values_list("email", "language"))
    assert stored == {"amelie@example.com": "fr", "erin@example.com": "en"}
    assert _email("amelie@example.com", "subscription-confirm:").subject.startswith("Confirmez")
    assert _email("erin@example.com", "subscription-confirm:").subject.startswith("Confirm your")


def test_it_changes_the_language_from_the_manage_page(client: Client, gmail) -> None:
    subscriber = make_subscriber(products=[gmail])
    path = reverse("subscriptions:manage", args=[make_token(subscriber, Purpose.MANAGE)])
    page = client.get(path)
    assert b'<option value="en" selected>' in page.content
    assert client.post(path, {"scope": "all", "language": "fr", "action": "save"}).status_code == 302
    subscriber.refresh_from_db()
    assert subscriber.language == "fr" and subscriber.all_products
    refused = client.post(path, {"scope": "all", "language": "de", "action": "save"})
    assert refused.status_code == 400
    subscriber.refresh_from_db()
    assert subscriber.language == "fr"
    # A form posted without the field (an older page) keeps the language.
    assert client.post(path, {"scope": "all", "action": "save"}).status_code == 302
    subscriber.refresh_from_db()
    assert subscriber.language == "fr"


def test_it_validates_the_language_in_the_services(gmail) -> None:
    with pytest.raises(ValidationError) as refused:
        subscription_services.subscriber_request(email="erin@example.com", language="de")
    assert "language" in refused.value.message_dict
    assert not Subscriber.objects.exists()
    subscriber = make_subscriber()
    with pytest.raises(ValidationError):
        subscription_services.subscriber_set_language(subscriber=subscriber, language="xx")
    assert (
        subscription_services.subscriber_set_language(subscriber=subscriber, language="fr").language == "fr"
    )


def test_it_sets_the_language_in_the_admin(client: Client, alice, gmail) -> None:
    subscriber = make_subscriber()
    client.force_login(alice)
    url = reverse("admin:subscriptions_subscriber_change", args=[subscriber.pk])
    form = {
        "kind": "email",
        "payload_format": "native",
        "email": subscriber.email,
        "url": "",
        "all_products": "on",
        "language": "fr",
        "confirmed_at_0": "2026-12-02",
        "confirmed_at_1": "14:05:00",
        "disabled_reason": "",
    }
    assert client.post(url, form).status_code == 302
    subscriber.refresh_from_db()
    assert subscriber.language == "fr"
    refused = client.post(url, {**form, "language": "de"})
    assert refused.status_code == 200 and b"Select a valid choice" in refused.content
    subscriber.refresh_from_db()
    assert subscriber.language == "fr"
    listing = client.get(reverse("admin:subscriptions_subscriber_changelist") + "?language__exact=fr")
    assert listing.status_code == 200 and subscriber.email.encode() in listing.content


def test_it_sets_and_filters_the_language_through_the_api(client: Client, alice) -> None:
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Token {key_for(alice)}"}
    subscriber = make_subscriber()
    url = f"/api/v1/subscribers/{subscriber.pk}/"
    assert client.get(url, **auth).json()["language"] == "en"
    changed = client.patch(url, {"language": "fr"}, content_type="application/json", **auth)
    assert changed.status_code == 200 and changed.json()["language"] == "fr"
    subscriber.refresh_from_db()
    assert subscriber.language == "fr"
    refused = client.patch(url, {"language": "klingon"}, content_type="application/json", **auth)
    assert refused.status_code == 400
    assert "language" in refused.json()["errors"]
    other = client.patch(url, {"email": "x@example.com"}, content_type="application/json", **auth)
    assert other.status_code == 400  # only the language is writable
    subscriber.refresh_from_db()
    assert (subscriber.language, subscriber.email) == ("fr", "carol@example.com")
    listed = client.get("/api/v1/subscribers/?language=fr", **auth).json()["results"]
    assert [r["email"] for r in listed] == ["carol@example.com"]
    assert client.get("/api/v1/subscribers/?language=en", **auth).json()["results"] == []
    assert client.get("/api/v1/subscribers/?language=xx", **auth).status_code == 400
