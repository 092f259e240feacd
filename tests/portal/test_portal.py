"""What a signed-in contact sees: its own products and regions, only the incidents that
touched them with its own affected time, its uptime against its SLA by the credit code,
its credits and statements."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone, translation
from freezegun import freeze_time

from credits import emails, services, sla
from credits.models import CreditNotice, Customer, NoticeState
from outbox.services import message_deliver
from portal import selectors
from tests.portal.conftest import NORTHWIND, TAILSPIN, TODAY, sign_in

pytestmark = pytest.mark.django_db

GCS_TITLE = "Cloud Storage elevated write latency"


def _page(client: Client, email: str, path: str = "/portal/") -> str:
    with freeze_time(TODAY):
        sign_in(client, email)
        response = client.get(path)
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    return response.content.decode()


def _send_october() -> CreditNotice:
    with freeze_time(TODAY):
        services.credits_compute(period="2026-10")
        notice = CreditNotice.objects.get(customer__name="Tailspin Toys", period="2026-10")
        services.credits_approve_and_send(notices=[notice], confirmed=True)
        notice.refresh_from_db()
        assert notice.message_id is not None
        message_deliver(message_id=notice.message_id)
    notice.refresh_from_db()
    assert notice.state == NoticeState.SENT
    return notice


def test_the_us_central1_customer_sees_the_cloud_storage_incident_and_its_18_h_11_min(
    client: Client, demo: None
) -> None:
    html = _page(client, TAILSPIN)
    assert "Tailspin Toys" in html
    assert "Cloud Storage" in html and "us-central1" in html
    item = html.split(GCS_TITLE)[1].split("</li>")[0]
    assert "<strong data-affected>18 h 11 min</strong>" in item
    assert "Gmail" not in html


def test_the_gmail_only_customer_does_not_see_it(client: Client, demo: None) -> None:
    html = _page(client, NORTHWIND)
    assert "Northwind Traders" in html and "Gmail" in html
    assert GCS_TITLE not in html
    assert "Cloud Storage" not in html


def test_the_portal_uptime_is_the_credit_letter_s(client: Client, demo: None) -> None:
    notice = _send_october()
    customer = notice.customer
    with freeze_time(TODAY):
        (measure,) = selectors.uptime_for(customer, sla.Period.parse(notice.period), now=timezone.now())
    # One code path: the figures the notice stored are the portal's.
    assert measure.result.uptime_percent_rounded == notice.uptime_percent
    assert measure.result.downtime_minutes_rounded == notice.downtime_minutes
    assert notice.uptime_percent < Decimal("99.9")

    html = _page(client, TAILSPIN)
    row = re.search(r'<tr data-period="2026-10">(.*?)</tr>', html, re.S)
    assert row is not None
    with translation.override("en"):
        letter = emails.notice_context(notice)
    assert f"<strong data-uptime>{letter['uptime_percent']}</strong>" in row.group(1)
    assert f"{notice.downtime_minutes} min" in row.group(1)
    # The credit the letter announced is listed, with its statement.
    assert 'href="/portal/statements/2026-10/"' in html
    assert "% of the monthly bill" in html


def test_statements_page_and_csv_show_only_sent_credits(client: Client, demo: None) -> None:
    notice = _send_october()
    html = _page(client, TAILSPIN, "/portal/statements/2026-10/")
    assert "us-central1" in html and f"{notice.uptime_percent}%" in html
    with freeze_time(TODAY):
        body = client.get("/portal/statements/2026-10/?output=csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["section"] for r in rows] == ["uptime", "credit"]
    assert rows[1]["uptime_percent"] == str(notice.uptime_percent)

    # A notice still under review is not the customer's to read yet.
    CreditNotice.objects.filter(pk=notice.pk).update(state=NoticeState.COMPUTED)
    with freeze_time(TODAY):
        body = client.get("/portal/statements/2026-10/?output=csv").content.decode()
    assert [r["section"] for r in csv.DictReader(io.StringIO(body))] == ["uptime"]
    assert client.get("/portal/statements/october/").status_code == 404


def test_a_contact_reads_only_its_own_customer(client: Client, demo: None) -> None:
    _send_october()
    html = _page(client, NORTHWIND, "/portal/statements/2026-10/")
    assert "Tailspin" not in html and "us-central1" not in html


def test_the_credit_letter_links_to_the_portal(demo: None) -> None:
    notice = _send_october()
    _subject, text, html = emails.render_credit_notice(notice)
    assert f"{settings.SITE_URL}/portal/" in text
    assert f'href="{settings.SITE_URL}/portal/"' in html
    Customer.objects.filter(pk=notice.customer_id).update(language="fr")
    notice.refresh_from_db()
    assert f"{settings.SITE_URL}/fr/portal/" in emails.render_credit_notice(notice)[1]


def test_the_portal_speaks_french(client: Client, demo: None) -> None:
    html = _page(client, TAILSPIN, "/fr/portal/")
    assert "Vos services" in html or "vos services" in html
    assert "18 h 11 min" in html.replace("\xa0", " ")


def test_the_portal_reads_in_a_bounded_number_of_queries(
    client: Client, demo: None, django_assert_max_num_queries: object
) -> None:
    with freeze_time(TODAY):
        sign_in(client, TAILSPIN)
        with django_assert_max_num_queries(30):  # type: ignore[operator]
            assert client.get("/portal/").status_code == 200
    assert Customer.objects.filter(name="Tailspin Toys").exists()
