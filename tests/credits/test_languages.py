"""Credit letters in the customer's language, and the shared render kept apart by what
differs between customers (the language, the entitled regions)."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation

from credits import emails, services
from credits.models import CreditNotice, Customer
from incidents import services as incident_services
from incidents.models import ImpactWindow, Incident
from tests.api.keys import key_for
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders


def flat(text: str) -> str:
    """The text letter with its line breaks (the wrapping at 72) read as spaces; no-break
    spaces are kept."""
    return re.sub(r"\n *", " ", text)


pytestmark = pytest.mark.django_db

NBSP = "\u00a0"


@pytest.fixture
def gmail_2009():  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15))
    return gmail


def _notices() -> list[CreditNotice]:
    return list(CreditNotice.objects.select_related("customer", "policy").order_by("customer__name"))


def _approve_and_compare() -> None:
    """Approve every notice through the set-based path (letter keys from plain values),
    then hold each queued email to a render of its notice alone."""
    services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    for notice in _notices():
        assert notice.message is not None
        subject, text, html = notice.message.content()
        assert (subject, text, html) == emails.render_credit_notice(notice), notice.customer.name


def test_it_writes_a_french_customers_letter_in_french_with_french_figures(gmail_2009, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SITE_NAME = "Status"
    policy = builders.workspace_policy()
    builders.customer("Acme", policy=policy, products=[(gmail_2009, None)], term_end_date=date(2010, 1, 31))
    french = builders.customer("Société Générique", policy=policy, products=[(gmail_2009, None)])
    services.customer_update(customer=french, language="fr")
    services.credits_compute(period="2009-09")
    english_notice, french_notice = _notices()

    subject, text, html = emails.render_credit_notice(french_notice)
    text = flat(text)
    # A subject is one line of plain spaces (its whitespace is collapsed, no-break ones too).
    assert subject == "[Status] Votre avoir SLA pour septembre 2009 : 3 jours de service"
    for body in (text, html):
        assert f"99,79{NBSP}%" in body  # uptime, French decimal comma and spacing
        assert f"99,9{NBSP}%" in body  # the target
        assert f"1{NBSP}h 30{NBSP}min" in body  # the duration, each figure kept with its unit
        assert "1er sept. 2009 à 12:45 PDT" in body  # the incident's start, in the policy's zone; "1er"
        assert "30 oct. 2009" in body  # the claim deadline
        assert "Votre avoir" in body and "3 jours de service" in body
        assert "Your credit" not in body and "99.79" not in body
    assert '<html lang="fr">' in html
    # Django's French month abbreviations.
    assert "La fin de votre contrat passe du 31 jan. 2010 au 3 fév. 2010." in text

    # The English customer's letter is what it always was, even when a French request
    # or task is what renders it.
    with translation.override("fr"):
        subject, raw, html = emails.render_credit_notice(english_notice)
    assert subject == "[Status] Your SLA credit for September 2009: 3 days of service"
    assert "  Uptime:       99.79% (target 99.9%)\n" in raw
    text = flat(raw)
    assert "2009-09-01 12:45 PDT to 2009-09-01 14:15 PDT (1 h 30 min)" in text
    assert "Your term end date moves from 2010-01-31 to 2010-02-03." in text
    assert "by 2009-10-30 (30 days from today)" in text
    assert '<html lang="en">' in html


def test_it_renders_alike_notices_apart_when_the_languages_differ(gmail_2009) -> None:  # type: ignore[no-untyped-def]
    policy = builders.workspace_policy()
    builders.customer("Acme", policy=policy, products=[(gmail_2009, None)])
    builders.customer("Bertin", policy=policy, products=[(gmail_2009, None)])
    services.customer_update(customer=Customer.objects.get(name="Bertin"), language="fr")
    services.credits_compute(period="2009-09")
    renderer = emails.CreditNoticeRenderer()
    acme, bertin = _notices()
    english, french = renderer.render(acme), renderer.render(bertin)
    assert len(renderer._memo) == 2
    assert english == emails.render_credit_notice(acme)
    assert french == emails.render_credit_notice(bertin)
    assert "Your credit" in english[1] and "Votre avoir" in french[1]
    _approve_and_compare()


def test_it_renders_alike_notices_apart_when_the_entitled_regions_differ(db) -> None:  # type: ignore[no-untyped-def]
    # One incident, an hour in each of two regions at different times: a customer in
    # either region has the same downtime, uptime and credit, but its own hour.
    storage = make_product("Cloud Storage")
    west, east = make_location("europe-west1"), make_location("us-east1")
    incident = incident_services.incident_open(
        title="Storage errors",
        impact=Incident.Impact.MAJOR,
        started_at=utc(2009, 9, 1, 19, 0),
        windows=[
            incident_services.WindowSpec(
                product=storage,
                level=ImpactWindow.Level.MAJOR_OUTAGE,
                started_at=utc(2009, 9, 1, 19, 0),
                ended_at=utc(2009, 9, 1, 20, 0),
                location=west,
            ),
            incident_services.WindowSpec(
                product=storage,
                level=ImpactWindow.Level.MAJOR_OUTAGE,
                started_at=utc(2009, 9, 1, 21, 0),
                ended_at=utc(2009, 9, 1, 22, 0),
                location=east,
            ),
        ],
    )
    incident_services.incident_resolve(incident=incident, resolved_at=utc(2009, 9, 1, 22, 0), body="Fixed.")
    policy = builders.workspace_policy()
    builders.customer("West Co", policy=policy, products=[(storage, west)])
    builders.customer("East Co", policy=policy, products=[(storage, east)])
    services.credits_compute(period="2009-09")
    east_notice, west_notice = _notices()
    # The notices are alike in every figure the letter quotes...
    for field in ("period", "unit", "credit", "downtime_minutes", "uptime_percent", "claim_deadline"):
        assert getattr(east_notice, field) == getattr(west_notice, field), field
    renderer = emails.CreditNoticeRenderer()
    east_letter, west_letter = renderer.render(east_notice), renderer.render(west_notice)
    # ...but each customer's own hour is its region's.
    assert "(2009-09-01 12:00 PDT to 2009-09-01 13:00 PDT)" in flat(west_letter[1])
    assert "(2009-09-01 14:00 PDT to 2009-09-01 15:00 PDT)" in flat(east_letter[1])
    assert east_letter != west_letter
    assert east_letter == emails.render_credit_notice(east_notice)
    assert west_letter == emails.render_credit_notice(west_notice)
    _approve_and_compare()


def test_it_validates_the_customers_language_in_the_services(db) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as refused:
        services.customer_create(name="Acme", billing_emails=["a@acme.example"], language="de")
    assert "language" in refused.value.message_dict
    acme = services.customer_create(name="Acme", billing_emails=["a@acme.example"], language="fr")
    assert acme.language == "fr"
    with pytest.raises(ValidationError):
        services.customer_update(customer=acme, language="")
    acme.refresh_from_db()
    assert acme.language == "fr"


def test_it_sets_and_validates_the_language_through_the_api(client, alice) -> None:  # type: ignore[no-untyped-def]
    auth = {"HTTP_AUTHORIZATION": f"Token {key_for(alice)}"}
    created = client.post(
        "/api/v1/customers/",
        {"name": "Initech", "billing_emails": ["ap@initech.example"], "language": "fr"},
        content_type="application/json",
        **auth,
    )
    assert created.status_code == 201, created.content
    assert created.json()["language"] == "fr"
    customer = Customer.objects.get(name="Initech")
    assert customer.language == "fr"
    default = client.post(
        "/api/v1/customers/",
        {"name": "Globex", "billing_emails": ["ap@globex.example"]},
        content_type="application/json",
        **auth,
    )
    assert default.json()["language"] == "en"
    bad = client.patch(
        f"/api/v1/customers/{customer.pk}/", {"language": "klingon"}, content_type="application/json", **auth
    )
    assert bad.status_code == 400
    assert "language" in bad.json()["errors"]
    customer.refresh_from_db()
    assert customer.language == "fr"
    changed = client.patch(
        f"/api/v1/customers/{customer.pk}/", {"language": "en"}, content_type="application/json", **auth
    )
    assert changed.status_code == 200 and changed.json()["language"] == "en"
    customer.refresh_from_db()
    assert customer.language == "en"
