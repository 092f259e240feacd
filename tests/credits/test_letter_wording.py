"""Issue 28, the credit letter as a customer reads it: whole sentences, remediation
introduced as what prevents a repeat, the incident's address once, no internal policy
name or "weighted minutes", text lines wrapped at 72 with URLs whole, and a Reply-To
(CREDITS_REPLY_TO) the letter mentions only when there is one."""

from __future__ import annotations

import email
import re
from decimal import Decimal as D
from email import policy as email_policy
from typing import Any

import pytest

from credits import emails, services
from credits.models import CreditNotice
from incidents.services.reports import report_publish, report_save
from outbox import delivery
from outbox.models import OutboundMessage
from tests.builders import approve_report, make_incident, make_location, make_product, utc
from tests.credits import builders
from tests.outbox.test_shared_bodies import _boundaryless

pytestmark = pytest.mark.django_db

LONG_SECOND = (
    "A configuration change to the load balancer bypassed the routing logic that takes each "
    "backend's free capacity into account. A few storage backends with little spare capacity "
    "were handed most of the region's write traffic, ran out of resources, and their data "
    "ingestion began to time out, so uploads routed to them were slow or failed for hours on end, "
    "while the metadata database, already under strain from a separate update rolled out the same "
    "morning, added errors of its own to every write that reached it."
)
REMEDIATION = (
    "Engineers drained the overloaded backends and reverted the change.\n\n"
    "Prevention:\n\n"
    "* **Safer rollouts:** validate load balancing changes in smaller regions first.\n"
    "* **Enforced capacity limits:** traffic can no longer bypass the [safeguards](https://example.com/x)\n"
    "* More resilient scaling"
)
LONG_NAME = "Contoso Pharmaceuticals International Holdings and Worldwide Subsidiaries GmbH & Co. KG"


def _case(remediation: str) -> dict[str, Any]:
    storage, central = make_product("Cloud Storage"), make_location("us-central1")
    incident = make_incident(
        title="Cloud Storage write errors",
        product=storage,
        location=central,
        start=utc(2026, 10, 8, 12, 0),
        end=utc(2026, 10, 9, 2, 0),
    )
    report_save(
        incident=incident,
        summary="Uploads in us-central1 failed. Nothing was lost.",
        root_cause=LONG_SECOND,
        remediation=remediation,
    )
    approve_report(incident)
    report_publish(incident=incident)
    policy = builders.storage_policy(name="Internal plan SKU-7731 (do not share)")
    for name, address in (("Acme", "billing@acme.example"), (LONG_NAME, "ap@contoso.example")):
        builders.customer(
            name, policy=policy, products=[(storage, central)], monthly_bill=D("1000.00"), emails=[address]
        )
    services.credits_compute(period="2026-10")
    notice = CreditNotice.objects.select_related("customer", "policy").get(customer__name="Acme")
    return {"incident": incident, "notice": notice, "url": f"/incidents/{incident.public_id}/"}


@pytest.fixture
def case(db: None) -> dict[str, Any]:
    return _case(REMEDIATION)


def _letter(notice: CreditNotice) -> tuple[str, str, str]:
    return emails.render_credit_notice(notice)


def test_why_is_summarised_by_whole_sentences(case: dict[str, Any]) -> None:
    _, text, html = _letter(case["notice"])
    flat = " ".join(text.split())
    first = LONG_SECOND.split(". ")[0] + "."
    # The second sentence would pass the summary's length: the first is given, whole.
    assert f"Why: {first} " in flat
    assert "A few storage backends" not in flat
    assert "…" not in text and "…" not in html
    assert f"<strong>Why:</strong> {first.replace(chr(39), '&#x27;')}</p>" in html


def test_a_first_sentence_longer_than_the_summary_is_given_whole() -> None:
    sentence = "Word " * 120 + "end."
    assert emails._sentences(sentence) == " ".join(sentence.split())
    assert emails._sentences("One. Two! Three? Four.", limit=2) == "One. Two!"
    assert emails._sentences("See e.g. the log. Then more.", limit=1) == "See e.g. the log."
    assert emails._sentences("- first item\n- second item\n\nLater.") == "first item. second item."


def test_the_remediation_is_introduced_as_what_prevents_a_repeat(case: dict[str, Any]) -> None:
    _, text, html = _letter(case["notice"])
    assert (
        "  What we are changing so that it does not happen again:\n"
        "    - Safer rollouts: validate load balancing changes in smaller regions\n"
        "      first.\n"
        "    - Enforced capacity limits: traffic can no longer bypass the\n"
        "      safeguards.\n"
        "    - More resilient scaling.\n"
    ) in text
    assert "Engineers drained" not in text  # how it was fixed is not a prevention
    assert "So it does not happen again" not in text and "Prevention:" not in text
    assert "<li>Enforced capacity limits: traffic can no longer bypass the safeguards.</li>" in html


def test_a_remediation_without_a_list_is_what_we_are_doing_about_it(db: None) -> None:
    case = _case("We added capacity. Rollouts now go region by region.")
    _, text, html = _letter(case["notice"])
    assert "What we are doing about it: We added capacity. Rollouts now go region by region." in " ".join(
        text.split()
    )
    assert "What we are changing" not in text and "What we are changing" not in html


def test_the_incident_address_appears_once(case: dict[str, Any]) -> None:
    _, text, html = _letter(case["notice"])
    assert text.count(case["url"]) == 1
    assert "Full incident report: http" in text and "Incident page:" not in text
    assert html.count(case["url"]) == 1


def test_the_customer_never_sees_the_policy_name_or_weighted_minutes(case: dict[str, Any]) -> None:
    subject, text, html = _letter(case["notice"])
    for body in (subject, text, html):
        assert "SKU-7731" not in body and "Internal plan" not in body
        assert "weighted" not in body.lower()
    minutes = case["notice"].downtime_minutes.normalize()
    assert f"  Downtime:     14 h ({minutes:f} minutes)\n" in text and minutes == 840
    assert "  Uptime:       " in text


def test_text_lines_wrap_at_72_and_keep_urls_whole(case: dict[str, Any], settings: Any) -> None:
    settings.SITE_URL = "https://status.example.com/a-deliberately/long/path/to/make/the/address/wider"
    long_notice = CreditNotice.objects.select_related("customer", "policy").get(customer__name=LONG_NAME)
    for notice in (case["notice"], long_notice):
        _, text, _ = _letter(notice)
        lines = text.split("\n")
        for line in lines[1:]:
            assert len(line) <= 72 or re.fullmatch(r" *(\S+: )?https?://\S+/?", line), line
        assert f"{settings.SITE_URL}/incidents/" in text  # never broken
        assert not any(line != line.rstrip() for line in lines)
    # A shared render (the name put in afterwards) is the letter rendered per notice.
    renderer = emails.CreditNoticeRenderer()
    assert renderer.render(long_notice) == _letter(long_notice)
    assert renderer.render(case["notice"]) == _letter(case["notice"])


def _sent_email(notice: CreditNotice) -> email.message.EmailMessage:
    services.credits_approve_and_send(confirmed=True, notices=[notice])
    message = OutboundMessage.objects.select_related("body").get(credit_notice__pk=notice.pk)
    letter = delivery._letter(message)
    assert letter is not None  # sent from the shared bytes, any Reply-To built into them
    assert (b"Reply-To: " in letter.head) == bool(message.headers)
    _sender, _to, raw = delivery.email_bytes(message)
    slow = delivery._envelope(delivery.build_email(message))[2]
    assert _boundaryless(raw) == _boundaryless(slow)  # the shared bytes are Django's
    parsed = email.message_from_bytes(raw, policy=email_policy.default)
    assert isinstance(parsed, email.message.EmailMessage)
    return parsed


def test_the_reply_to_is_the_billing_address_when_set(case: dict[str, Any], settings: Any) -> None:
    settings.CREDITS_REPLY_TO = "Billing <billing@example.com>"
    mail = _sent_email(case["notice"])
    assert mail["Reply-To"] == "Billing <billing@example.com>"
    text = " ".join(mail.get_body(("plain",)).get_content().split())  # type: ignore[union-attr]
    html = mail.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert "reply to this email" in text and "replies go to our billing team at billing@example.com." in text
    assert "replies go to our billing team at billing@example.com." in html


def test_without_a_reply_address_the_letter_says_how_to_write(case: dict[str, Any], settings: Any) -> None:
    settings.CREDITS_REPLY_TO = ""
    mail = _sent_email(case["notice"])
    assert mail["Reply-To"] is None
    for part in ("plain", "html"):
        body = " ".join(mail.get_body((part,)).get_content().split())  # type: ignore[union-attr]
        assert "reply to this email" not in body.lower()
        assert "through your usual billing contact" in body


def test_a_french_letter_has_every_new_sentence_in_french(case: dict[str, Any], settings: Any) -> None:
    settings.CREDITS_REPLY_TO = "facturation@example.com"
    notice = case["notice"]
    services.customer_update(customer=notice.customer, language="fr")
    notice.refresh_from_db()
    _, text, html = _letter(notice)
    flat = " ".join(text.split())
    assert "Ce que nous changeons pour que cela ne se reproduise pas" in flat
    assert "les réponses vont à notre service facturation, à l’adresse facturation@example.com" in flat
    assert "promise par votre contrat de niveau de service. Voici" in flat
    for english in ("What we are changing", "reply to this email", "weighted", "minutes pondérées"):
        assert english not in text, english
    assert "Ce que nous changeons" in html
