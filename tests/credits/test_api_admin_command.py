"""The staff surfaces of SLA credits: API, admin and the sla_credits command."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from decimal import Decimal as D
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from credits import services
from credits.models import CreditNotice, Customer, NoticeState, SLAPolicy
from outbox.models import OutboundMessage
from tests.api.keys import key_for
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders
from tests.outbox.smtp import SmtpSink

pytestmark = pytest.mark.django_db


@pytest.fixture
def gmail_setup():  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15))
    policy = builders.workspace_policy()
    acme = builders.customer("Acme", policy=policy, products=[(gmail, None)])
    return gmail, policy, acme


def _auth(user) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"HTTP_AUTHORIZATION": f"Token {key_for(user)}"}


# --- API -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, url",
    [
        ("get", "/api/v1/customers/"),
        ("get", "/api/v1/sla-policies/"),
        ("get", "/api/v1/credit-notices/"),
        ("post", "/api/v1/credit-notices/compute/"),
        ("post", "/api/v1/credit-notices/approve/"),
    ],
)
def test_it_keeps_the_credits_api_staff_only(client, bob, method: str, url: str, gmail_setup) -> None:  # type: ignore[no-untyped-def]
    anonymous = getattr(client, method)(url, data={"period": "2009-09"}, content_type="application/json")
    assert anonymous.status_code == 401
    non_staff = getattr(client, method)(
        url, data={"period": "2009-09"}, content_type="application/json", **_auth(bob)
    )
    assert non_staff.status_code == 403
    assert CreditNotice.objects.count() == 0
    assert b"Acme" not in anonymous.content + non_staff.content


def test_it_computes_lists_and_approves_through_the_api(
    client, alice, gmail_setup, smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    _, _, acme = gmail_setup
    auth = _auth(alice)
    computed = client.post(
        "/api/v1/credit-notices/compute/", {"period": "2009-09"}, content_type="application/json", **auth
    )
    assert computed.status_code == 200
    assert computed.json()["created"] == 1

    listed = client.get("/api/v1/credit-notices/?period=2009-09", **auth)
    assert listed.status_code == 200
    [row] = listed.json()["results"]
    assert row["customer_name"] == "Acme"
    assert (row["uptime_percent"], row["credit"], row["unit"], row["state"]) == (
        "99.7916",
        "3.00",
        "days",
        "computed",
    )

    with django_capture_on_commit_callbacks(execute=True):
        approved = client.post(
            "/api/v1/credit-notices/approve/",
            {"ids": [row["id"]], "confirm": True},
            content_type="application/json",
            **auth,
        )
    assert approved.status_code == 200
    assert approved.json() == {
        "queued": 1,
        "retried": 0,
        "skipped": 0,
        "awaiting_approval": False,
        "prepared_by": "",
    }
    detail = client.get(f"/api/v1/credit-notices/{row['id']}/", **auth).json()
    assert detail["state"] == "sent"
    assert detail["message_state"] == "sent"
    assert len(smtp.handler.snapshot()) == 1
    acme.refresh_from_db()
    assert acme.term_end_date == date(2010, 2, 3)

    cancel = client.post(f"/api/v1/credit-notices/{row['id']}/cancel/", **auth)
    assert cancel.status_code == 400
    assert CreditNotice.objects.get().state == NoticeState.SENT


def test_it_validates_api_input(client, alice, gmail_setup) -> None:  # type: ignore[no-untyped-def]
    auth = _auth(alice)
    bad_period = client.post(
        "/api/v1/credit-notices/compute/", {"period": "2009-9"}, content_type="application/json", **auth
    )
    assert bad_period.status_code == 400
    assert "period" in bad_period.json()["errors"]
    nothing = client.post("/api/v1/credit-notices/approve/", {}, content_type="application/json", **auth)
    assert nothing.status_code == 400
    huge = client.post(
        "/api/v1/credit-notices/approve/", {"ids": [10**30]}, content_type="application/json", **auth
    )
    assert huge.status_code == 400  # not a database overflow
    injected = client.post(
        "/api/v1/customers/",
        {"name": "Evil\r\nBcc: x@example.com", "billing_emails": ["a@example.com"]},
        content_type="application/json",
        **auth,
    )
    assert injected.status_code == 400
    assert "name" in injected.json()["errors"]
    bad_address = client.post(
        "/api/v1/customers/",
        {"name": "Evil", "billing_emails": ["a@example.com\nBcc: x@example.com"]},
        content_type="application/json",
        **auth,
    )
    assert bad_address.status_code == 400
    assert Customer.objects.filter(name__startswith="Evil").count() == 0


def test_it_creates_customers_and_policies_through_the_api(client, alice, gmail_setup) -> None:  # type: ignore[no-untyped-def]
    auth = _auth(alice)
    make_location("us-central1")
    storage = make_product("Cloud Storage", slug="cloud-storage")
    policy = client.post(
        "/api/v1/sla-policies/",
        {
            "name": "Storage",
            "target": "99.9",
            "time_zone": "US/Pacific",
            "unit": "percent",
            "cap": "50",
            "tiers": [{"below": "99.9", "credit": "10"}, {"below": "99.0", "credit": "25"}],
        },
        content_type="application/json",
        **auth,
    )
    assert policy.status_code == 201, policy.content
    assert len(policy.json()["tiers"]) == 2
    created = client.post(
        "/api/v1/customers/",
        {
            "name": "Initech",
            "billing_emails": ["ap@initech.example"],
            "policy": policy.json()["id"],
            "monthly_bill": "100.00",
            "entitlements": [{"product": storage.slug, "location": "us-central1"}],
        },
        content_type="application/json",
        **auth,
    )
    assert created.status_code == 201, created.content
    customer = Customer.objects.get(name="Initech")
    entitlement = customer.entitlements.get()
    # Each entitlement carries its id, which DELETE .../entitlements/{id}/ takes.
    assert created.json()["entitlements"] == [
        {"id": entitlement.pk, "product": "cloud-storage", "location": "us-central1", "policy": None}
    ]
    assert entitlement.location.name == "us-central1"  # type: ignore[union-attr]
    bad_tz = client.post(
        "/api/v1/sla-policies/",
        {"name": "X", "target": "99.9", "time_zone": "Mars/Olympus", "tiers": []},
        content_type="application/json",
        **auth,
    )
    assert bad_tz.status_code == 400
    assert not SLAPolicy.objects.filter(name="X").exists()


# --- Admin -----------------------------------------------------------------------------------


def test_it_runs_the_review_flow_in_the_admin(
    staff_client, gmail_setup, smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    page = staff_client.get("/admin/credits/creditnotice/compute/")
    assert page.status_code == 200
    response = staff_client.post("/admin/credits/creditnotice/compute/", {"period": "2009-09"})
    assert response.status_code == 302
    assert response["Location"].endswith("?period=2009-09")
    notice = CreditNotice.objects.get()
    listing = staff_client.get("/admin/credits/creditnotice/?period=2009-09")
    assert listing.status_code == 200
    assert b"Acme" in listing.content and b"99.7916%" in listing.content and b"3 days" in listing.content

    # The admin action sends nothing: it hands over to the console's confirmation page.
    with django_capture_on_commit_callbacks(execute=True):
        asked = staff_client.post(
            "/admin/credits/creditnotice/",
            {"action": "approve_and_send", "_selected_action": [notice.pk]},
        )
    assert asked.status_code == 302
    assert asked["Location"].startswith("/manage/credits/confirm/?ids=")
    notice.refresh_from_db()
    assert notice.state == NoticeState.COMPUTED
    assert smtp.handler.snapshot() == []
    page = staff_client.get(asked["Location"])
    token = page.context["plan"].token
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post("/manage/credits/send/", {"confirmation": token})
    notice.refresh_from_db()
    assert notice.state == NoticeState.SENT
    assert len(smtp.handler.snapshot()) == 1
    detail = staff_client.get(f"/admin/credits/creditnotice/{notice.pk}/change/")
    assert detail.status_code == 200
    assert b"Gmail web interface unavailable" in detail.content
    assert staff_client.get("/admin/credits/customer/").status_code == 200
    assert staff_client.get(f"/admin/credits/customer/{notice.customer_id}/change/").status_code == 200
    assert staff_client.get(f"/admin/credits/slapolicy/{notice.policy_id}/change/").status_code == 200


def test_it_cancels_from_the_admin_and_refuses_bad_names(staff_client, gmail_setup) -> None:  # type: ignore[no-untyped-def]
    services.credits_compute(period="2009-09")
    notice = CreditNotice.objects.get()
    staff_client.post(
        "/admin/credits/creditnotice/", {"action": "cancel_notices", "_selected_action": [notice.pk]}
    )
    notice.refresh_from_db()
    assert notice.state == NoticeState.CANCELLED
    _, policy, _ = gmail_setup
    response = staff_client.post(
        "/admin/credits/customer/add/",
        {
            "name": "Evil\r\nBcc: x@example.com",
            "billing_emails": "ok@example.com\r\nBcc: x@example.com",
            "policy": policy.pk,
            "sla_eligible": "on",
            "currency": "USD",
            "language": "en",
            "entitlements-TOTAL_FORMS": "0",
            "entitlements-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200  # the form again, with errors
    assert b"Line breaks and control characters are not allowed." in response.content
    assert b"is not a single plain email address" in response.content
    assert not Customer.objects.filter(name__startswith="Evil").exists()


def test_it_saves_customers_and_policies_from_the_admin_through_the_services(
    staff_client, gmail_setup
) -> None:  # type: ignore[no-untyped-def]
    gmail, policy, _ = gmail_setup
    response = staff_client.post(
        "/admin/credits/customer/add/",
        {
            "name": "Globex",
            "billing_emails": "billing@globex.example",
            "policy": policy.pk,
            "sla_eligible": "on",
            "currency": "eur",
            "language": "fr",
            "entitlements-TOTAL_FORMS": "1",
            "entitlements-INITIAL_FORMS": "0",
            "entitlements-0-product": gmail.pk,
        },
    )
    assert response.status_code == 302
    globex = Customer.objects.get(name="Globex")
    assert globex.currency == "EUR"  # the service's normalisation, not the form's
    assert globex.language == "fr"  # its letters are written in French
    assert [e.product for e in globex.entitlements.all()] == [gmail]

    fields = {
        "name": "Regional",
        "description": "",
        "target": "99.9",
        "time_zone": "Mars/Olympus",
        "unit": "percent",
        "cap": "",
        "claim_window_days": "30",
        "weight_major_outage": "1",
        "weight_partial_outage": "1",
        "weight_degraded_performance": "0",
        "weight_under_maintenance": "0",
        "min_downtime_minutes": "0",
        "tiers-TOTAL_FORMS": "2",
        "tiers-INITIAL_FORMS": "0",
        "tiers-0-below": "99.9",
        "tiers-0-credit": "10",
        "tiers-1-below": "99.0",
        "tiers-1-credit": "25",
    }
    response = staff_client.post("/admin/credits/slapolicy/add/", fields)
    assert response.status_code == 200 and b"is not a time zone" in response.content
    response = staff_client.post("/admin/credits/slapolicy/add/", {**fields, "time_zone": "UTC"})
    assert response.status_code == 302
    regional = SLAPolicy.objects.get(name="Regional")
    assert sorted((t.below, t.credit) for t in regional.tiers.all()) == [
        (Decimal("99.000"), Decimal("25.00")),
        (Decimal("99.900"), Decimal("10.00")),
    ]


def test_it_keeps_the_admin_pages_staff_only(client, bob, gmail_setup) -> None:  # type: ignore[no-untyped-def]
    client.force_login(bob)
    for url in (
        "/admin/credits/creditnotice/",
        "/admin/credits/creditnotice/compute/",
        "/admin/credits/customer/",
    ):
        assert client.get(url).status_code == 302
    assert client.post("/admin/credits/creditnotice/compute/", {"period": "2009-09"}).status_code == 302
    assert CreditNotice.objects.count() == 0


# --- Command -----------------------------------------------------------------------------------


def test_it_computes_and_sends_from_the_command(
    gmail_setup, smtp: SmtpSink, django_capture_on_commit_callbacks, fiona
) -> None:  # type: ignore[no-untyped-def]
    out = StringIO()
    call_command("sla_credits", "compute", "--period", "2009-09", "--json", stdout=out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert rows == [
        {
            "id": CreditNotice.objects.get().pk,
            "customer": "Acme",
            "customer_id": gmail_setup[2].pk,
            "policy": "Workspace",
            "period": "2009-09",
            "downtime_minutes": "90.00",
            "uptime_percent": "99.7916",
            "credit": "3.00",
            "unit": "days",
            "credit_amount": None,
            "state": "computed",
            # One policy version ruled the whole month (US/Pacific: 07:00 UTC).
            "versions": [
                {
                    "effective_from": "1970-01-01",
                    "start": "2009-09-01T07:00:00+00:00",
                    "end": "2009-10-01T07:00:00+00:00",
                    "target": "99.9",
                    "downtime_minutes": "90.00",
                    "uptime_percent": "99.7916",
                    "tier_credit": "3.00",
                    "credit": "3.00",
                }
            ],
        }
    ]
    out = StringIO()
    call_command("sla_credits", "compute", "--period", "2009-09", stdout=out)
    assert "created 0, updated 0, unchanged 1" in out.getvalue()

    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "sla_credits", "send", "--period", "2009-09", "--yes", "--as", fiona.username, stdout=out
        )
    assert "1 notices approved and queued" in out.getvalue()
    assert CreditNotice.objects.get().state == NoticeState.SENT
    assert OutboundMessage.objects.count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "sla_credits", "send", "--period", "2009-09", "--yes", "--as", fiona.username, stdout=StringIO()
        )
    assert OutboundMessage.objects.count() == 1
    assert len(smtp.handler.snapshot()) == 1


def test_it_refuses_a_bad_period_in_the_command(db) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError):
        call_command("sla_credits", "compute", "--period", "September", stdout=StringIO())


def test_it_loads_a_reviewable_demo(db) -> None:  # type: ignore[no-untyped-def]
    from demo import credits as demo
    from demo import incidents as incidents_demo

    incidents_demo.load()
    first = demo.load()
    assert (first.policies_created, first.customers_created) == (2, len(demo.CUSTOMERS))
    again = demo.load()
    assert (again.policies_created, again.customers_created) == (0, 0)

    services.credits_compute(period="2009-09")
    september = {
        n.customer.name: (n.uptime_percent, n.credit) for n in CreditNotice.objects.filter(period="2009-09")
    }
    assert september == {
        "Northwind Traders": (D("99.7916"), D("3.00")),
        "Contoso Pharmaceuticals": (D("99.7916"), D("3.00")),
        "Blue Yonder Airlines": (D("99.7916"), D("3.00")),
    }
    services.credits_compute(period="2026-10")
    october = {
        n.customer.name: (n.credit, n.credit_amount) for n in CreditNotice.objects.filter(period="2026-10")
    }
    assert october == {
        "Tailspin Toys": (D("25.00"), D("3000.00")),
        "Wide World Importers": (D("25.00"), D("1200.00")),
        "Adventure Works": (D("25.00"), D("625.00")),
        "Blue Yonder Airlines": (D("25.00"), D("7500.00")),
    }
