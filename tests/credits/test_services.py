"""Computing, approving, sending and cancelling credit notices (database, in-process tasks)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal as D
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError

from credits import services, sla
from credits.models import CreditNotice, Customer, NoticeState
from incidents.models import ImpactWindow, Incident, Location
from outbox.models import MessageState, OutboundMessage
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders
from tests.outbox.smtp import SmtpSink

pytestmark = pytest.mark.django_db


@pytest.fixture
def gmail_2009():  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    incident = make_incident(product=gmail, start=utc(2009, 9, 1, 19, 45), end=utc(2009, 9, 1, 21, 15))
    return gmail, incident


def test_it_gives_the_2009_gmail_outage_99_79_percent_and_3_days(
    gmail_2009, smtp: SmtpSink, alice, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    gmail, incident = gmail_2009
    policy = builders.workspace_policy()
    acme = builders.customer("Acme", policy=policy, products=[(gmail, None)], term_end_date=date(2010, 1, 31))

    summary = services.credits_compute(period="2009-09")

    assert (summary.created, summary.customers_considered) == (1, 1)
    notice = CreditNotice.objects.get()
    assert notice.customer == acme
    assert notice.period == "2009-09"
    assert notice.downtime_minutes == D("90.00")
    assert notice.uptime_percent == D("99.7916")
    assert notice.credit == D("3.00")
    assert notice.unit == "days"
    assert notice.state == NoticeState.COMPUTED
    assert list(notice.incidents.all()) == [incident]
    assert notice.claim_deadline == date(2009, 10, 30)
    assert OutboundMessage.objects.count() == 0  # computing sends nothing

    with django_capture_on_commit_callbacks(execute=True):
        sent = services.credits_approve_and_send(confirmed=True, notices=[notice], actor=alice)
    assert sent.queued == 1

    notice.refresh_from_db()
    acme.refresh_from_db()
    assert notice.state == NoticeState.SENT
    assert notice.sent_at is not None
    assert notice.approved_by == alice
    assert notice.term_extended_at is not None
    assert acme.term_end_date == date(2010, 2, 3)  # moved by 3 days, once
    received = smtp.handler.wait_for(1)
    assert len(received) == 1
    mail = received[0]
    assert mail.rcpt_tos == ["billing@acme.example"]
    assert mail.message_id == notice.email_message_id == notice.message.message_id  # type: ignore[union-attr]
    assert "September 2009" in str(mail.message["Subject"])
    assert "3 days" in str(mail.message["Subject"])
    text = mail.message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    html = mail.message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    for body in (text, html):
        assert "99.79%" in body
        assert "Gmail web interface unavailable" in body
        assert f"/incidents/{incident.public_id}/" in body
        assert "2010-01-31" in body and "2010-02-03" in body
        # The claim deadline counts from the sending day (30 days), not from the month.
        sent_day = notice.approved_at.astimezone(ZoneInfo("US/Pacific")).date()  # type: ignore[union-attr]
        assert notice.claim_deadline == sla.claim_deadline(sent_day, 30)
        assert notice.claim_deadline.isoformat() in body
        assert "September 2009" in body

    # Approving again, recomputing, or a redelivered "sent" changes nothing.
    with django_capture_on_commit_callbacks(execute=True):
        again = services.credits_approve_and_send(confirmed=True, notices=[notice], actor=alice)
    assert (again.queued, again.skipped) == (0, 1)
    services.delivery._on_notice_sent(notice.message)  # type: ignore[arg-type]
    again_summary = services.credits_compute(period="2009-09")
    assert (again_summary.created, again_summary.updated, again_summary.kept_final) == (0, 0, 1)
    acme.refresh_from_db()
    assert acme.term_end_date == date(2010, 2, 3)
    assert len(smtp.handler.snapshot()) == 1
    assert OutboundMessage.objects.count() == 1


def test_it_computes_idempotently_and_refreshes_only_unreviewed_notices(gmail_2009) -> None:  # type: ignore[no-untyped-def]
    gmail, incident = gmail_2009
    policy = builders.workspace_policy()
    builders.customer("Acme", policy=policy, products=[(gmail, None)])
    builders.customer("Globex", policy=policy, products=[(gmail, None)])
    first = services.credits_compute(period="2009-09")
    assert first.created == 2
    before = list(CreditNotice.objects.order_by("pk").values_list("pk", "updated_at", "uptime_percent"))

    second = services.credits_compute(period="2009-09")
    assert (second.created, second.updated, second.unchanged, second.removed) == (0, 0, 2, 0)
    assert (
        list(CreditNotice.objects.order_by("pk").values_list("pk", "updated_at", "uptime_percent")) == before
    )

    # Staff approve one; then the window is corrected to a longer outage.
    acme_notice = CreditNotice.objects.get(customer__name="Acme")
    CreditNotice.objects.filter(pk=acme_notice.pk).update(state=NoticeState.APPROVED)
    ImpactWindow.objects.filter(incident=incident).update(ended_at=utc(2009, 9, 2, 3, 45))  # 8 h
    third = services.credits_compute(period="2009-09")
    assert (third.created, third.updated, third.kept_final) == (0, 1, 1)
    assert CreditNotice.objects.get(customer__name="Globex").credit == D("7.00")
    acme_notice.refresh_from_db()
    assert acme_notice.credit == D("3.00")  # approved: never rewritten
    assert acme_notice.state == NoticeState.APPROVED

    # Impact removed entirely: the unreviewed notice goes, the approved one stays.
    ImpactWindow.objects.filter(incident=incident).update(ended_at=utc(2009, 9, 1, 19, 50))
    fourth = services.credits_compute(period="2009-09")
    assert fourth.removed == 1
    assert list(CreditNotice.objects.values_list("customer__name", flat=True)) == ["Acme"]


def test_it_only_credits_entitled_eligible_customers_in_the_affected_locations() -> None:
    storage = make_product("Cloud Storage", slug="cloud-storage")
    gmail = make_product("Gmail")
    glob = make_location("global", kind=Location.Kind.GLOBAL)
    region = make_location("us-central1", parent=glob)
    zone_a = make_location("us-central1-a", kind=Location.Kind.ZONE, parent=region)
    zone_b = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=region)
    europe = make_location("europe-west1", parent=glob)
    # Region-wide for 12 h 30 min, then zone b alone for 5 h 41 min (the 2026-10 incident).
    incident = make_incident(
        title="Cloud Storage writes failing",
        product=storage,
        location=region,
        level=ImpactWindow.Level.PARTIAL_OUTAGE,
        start=utc(2026, 10, 8, 11, 0),
        end=utc(2026, 10, 8, 23, 30),
    )
    ImpactWindow.objects.create(
        incident=incident,
        product=storage,
        location=zone_b,
        level=ImpactWindow.Level.PARTIAL_OUTAGE,
        started_at=utc(2026, 10, 9, 11, 5),
        ended_at=utc(2026, 10, 9, 16, 46),
    )
    policy = builders.storage_policy()
    bill = D("1000.00")
    builders.customer("Region", policy=policy, products=[(storage, region)], monthly_bill=bill)
    builders.customer("ZoneB", policy=policy, products=[(storage, zone_b)], monthly_bill=bill)
    builders.customer("ZoneA", policy=policy, products=[(storage, zone_a)], monthly_bill=bill)
    builders.customer("Everywhere", policy=policy, products=[(storage, None)], monthly_bill=bill)
    builders.customer("Europe", policy=policy, products=[(storage, europe)], monthly_bill=bill)
    builders.customer("GmailOnly", policy=policy, products=[(gmail, None)], monthly_bill=bill)
    builders.customer("NoSla", policy=policy, products=[(storage, region)], sla_eligible=False)

    services.credits_compute(period="2026-10")

    got = {
        n.customer.name: (n.downtime_minutes, n.uptime_percent, n.credit, n.credit_amount)
        for n in CreditNotice.objects.select_related("customer")
    }
    assert got == {
        "Region": (D("1091.00"), D("97.5560"), D("25.00"), D("250.00")),
        "ZoneB": (D("1091.00"), D("97.5560"), D("25.00"), D("250.00")),
        "Everywhere": (D("1091.00"), D("97.5560"), D("25.00"), D("250.00")),
        "ZoneA": (D("750.00"), D("98.3198"), D("25.00"), D("250.00")),
    }


def test_it_uses_the_entitlements_own_policy_for_a_second_product(gmail_2009) -> None:  # type: ignore[no-untyped-def]
    gmail, _ = gmail_2009
    storage = make_product("Cloud Storage", slug="cloud-storage")
    make_incident(
        title="Storage down", product=storage, start=utc(2009, 9, 10, 0, 0), end=utc(2009, 9, 10, 2, 0)
    )
    workspace = builders.workspace_policy()
    gcs = builders.storage_policy()
    both = builders.customer("Both", policy=workspace, products=[(gmail, None)], monthly_bill=D("500.00"))
    services.customer_entitle(customer=both, product=storage, policy=gcs)
    services.credits_compute(period="2009-09")
    notices = {n.policy.name: (n.downtime_minutes, n.credit, n.unit) for n in CreditNotice.objects.all()}
    assert notices == {
        "Workspace": (D("90.00"), D("3.00"), "days"),
        "Cloud Storage regional": (D("120.00"), D("10.00"), "percent"),
    }


def test_it_fails_a_refused_notice_visibly_and_retries_it_on_request(
    gmail_2009, smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    gmail, _ = gmail_2009
    acme = builders.customer("Acme", policy=builders.workspace_policy(), products=[(gmail, None)])
    smtp.handler.refuse_rcpt["billing@acme.example"] = "550 5.1.1 Mailbox unavailable"
    services.credits_compute(period="2009-09")
    with django_capture_on_commit_callbacks(execute=True):
        services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    notice = CreditNotice.objects.get()
    assert notice.state == NoticeState.FAILED
    assert "550" in notice.last_error
    acme.refresh_from_db()
    assert acme.term_end_date == date(2010, 1, 31)  # no credit applied for an unsent notice

    smtp.handler.refuse_rcpt.clear()
    with django_capture_on_commit_callbacks(execute=True):
        summary = services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    assert summary.retried == 1
    notice.refresh_from_db()
    acme.refresh_from_db()
    assert notice.state == NoticeState.SENT
    assert acme.term_end_date == date(2010, 2, 3)
    assert len(smtp.handler.snapshot()) == 1


def test_it_cancels_notices_before_they_go_out(gmail_2009) -> None:  # type: ignore[no-untyped-def]
    gmail, _ = gmail_2009
    policy = builders.workspace_policy()
    builders.customer("Acme", policy=policy, products=[(gmail, None)])
    builders.customer("Globex", policy=policy, products=[(gmail, None)])
    services.credits_compute(period="2009-09")
    acme, globex = CreditNotice.objects.order_by("customer__name")
    services.credits_cancel(notice=acme)
    # Queued but not yet delivered (no commit has run its task): the email is stopped too.
    services.credits_approve_and_send(confirmed=True, notices=[globex])
    services.credits_cancel(notice=globex)
    globex.refresh_from_db()
    assert globex.state == NoticeState.CANCELLED
    assert globex.message is not None and globex.message.state == MessageState.CANCELLED
    # Cancelled notices stay cancelled on recompute and cannot be approved.
    summary = services.credits_compute(period="2009-09")
    assert summary.kept_final == 2
    assert services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all()).skipped == 2
    with pytest.raises(ValidationError):
        services.credits_cancel(notice=acme)


@pytest.mark.parametrize(
    "field, kw",
    [
        ("name", {"name": "Acme\r\nBcc: victim@example.com"}),
        ("name", {"name": "Acme\nInc"}),
        ("billing_emails", {"billing_emails": ["billing@acme.example\r\nBcc: victim@example.com"]}),
        ("billing_emails", {"billing_emails": ["billing@acme.example\nCc: x@example.com"]}),
        ("billing_emails", {"billing_emails": ["Acme <billing@acme.example>"]}),
        ("billing_emails", {"billing_emails": []}),
    ],
)
def test_it_refuses_header_injection_in_customer_names_and_addresses(
    field: str, kw: dict[str, object]
) -> None:
    params: dict[str, object] = {"name": "Acme", "billing_emails": ["billing@acme.example"]}
    params.update(kw)
    with pytest.raises(ValidationError) as excinfo:
        services.customer_create(**params)  # type: ignore[arg-type]
    assert field in excinfo.value.message_dict
    assert Customer.objects.count() == 0


def test_it_renders_user_text_literally_in_emails(smtp: SmtpSink, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    make_incident(
        title="{{ settings.SECRET_KEY }} <script>alert(1)</script>",
        product=gmail,
        start=utc(2009, 9, 1, 19, 45),
        end=utc(2009, 9, 1, 21, 15),
    )
    builders.customer(
        "Acme <b>& Co</b>",
        policy=builders.workspace_policy(),
        products=[(gmail, None)],
        emails=["a@acme.example"],
    )
    services.credits_compute(period="2009-09")
    with django_capture_on_commit_callbacks(execute=True):
        services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    mail = smtp.handler.wait_for(1)[0]
    html = mail.message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    text = mail.message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "Acme &lt;b&gt;&amp; Co&lt;/b&gt;" in html
    assert "{{ settings.SECRET_KEY }}" in text  # literal, never evaluated
    assert "test-only-secret-key" not in text + html


def test_it_does_not_link_internal_incidents(smtp: SmtpSink, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    hidden = make_incident(
        title="Internal database failover",
        product=gmail,
        start=utc(2009, 9, 1, 19, 45),
        end=utc(2009, 9, 1, 21, 15),
    )
    builders.customer("Acme", policy=builders.workspace_policy(), products=[(gmail, None)])
    services.credits_compute(period="2009-09")
    assert list(CreditNotice.objects.get().incidents.all()) == [hidden]
    # Taken back out of public view after its notice was computed (a draft from the start
    # would owe nothing: tests/credits/test_drafts.py): the letter must still not name it.
    Incident.objects.filter(pk=hidden.pk).update(is_public=False)
    with django_capture_on_commit_callbacks(execute=True):
        services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    raw = smtp.handler.wait_for(1)[0].raw.decode()
    assert "Internal database failover" not in raw
    assert hidden.public_id not in raw
    assert Incident.objects.count() == 1


def test_it_never_mails_or_extends_twice_when_a_sent_notice_is_recreated(
    gmail_2009, smtp: SmtpSink, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    gmail, _ = gmail_2009
    acme = builders.customer("Acme", policy=builders.workspace_policy(), products=[(gmail, None)])
    services.credits_compute(period="2009-09")
    with django_capture_on_commit_callbacks(execute=True):
        services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    # Someone deletes the sent notice by hand (the admin does not allow it) and recomputes.
    CreditNotice.objects.all().delete()
    services.credits_compute(period="2009-09")
    with django_capture_on_commit_callbacks(execute=True):
        services.credits_approve_and_send(confirmed=True, notices=CreditNotice.objects.all())
    twin = CreditNotice.objects.get()
    assert twin.state == NoticeState.SENT
    assert OutboundMessage.objects.count() == 1
    assert len(smtp.handler.snapshot()) == 1
    acme.refresh_from_db()
    assert acme.term_end_date == date(2010, 2, 3)


def test_it_renders_alike_notices_once_and_exactly_as_one_by_one(gmail_2009) -> None:  # type: ignore[no-untyped-def]
    from credits import emails

    gmail, _ = gmail_2009
    policy = builders.workspace_policy()
    for i, name in enumerate(("Acme", "O'Brien & <Sons>", "Zed")):
        builders.customer(name, policy=policy, products=[(gmail, None)], emails=[f"billing{i}@example.com"])
    builders.customer("No term", policy=policy, products=[(gmail, None)], term_end_date=None)
    services.credits_compute(period="2009-09")
    renderer = emails.CreditNoticeRenderer()
    for notice in CreditNotice.objects.select_related("customer", "policy").order_by("pk"):
        assert renderer.render(notice) == emails.render_credit_notice(notice)
    assert len(renderer._memo) == 2  # with a term date and without: two distinct emails


def test_a_letter_key_counts_only_the_products_under_the_notices_policy() -> None:
    from credits import emails

    def key(
        customer_policy_id: int, entitlements: list[tuple[int, int | None, int | None]]
    ) -> tuple[object, ...]:
        return emails.letter_key(
            policy=(7, "Workspace", "UTC", D("99.9"), 30, "declared"),
            language="en",
            term_end_date=None,
            currency="USD",
            customer_policy_id=customer_policy_id,
            period="2009-09",
            unit="days",
            credit=D(3),
            credit_amount=None,
            downtime_minutes=D(90),
            uptime_percent=D("99.79"),
            measured=("declared", None, ()),
            claim_deadline=None,
            term_extended=False,
            computed_at=datetime(2009, 10, 1, tzinfo=UTC),
            incidents=(),
            entitlements=entitlements,
        )

    # Gmail (1) with no policy of its own, Storage (2) under policy 7 explicitly: a
    # customer on policy 7 has both under it, one on policy 8 only Storage. Their
    # letters for policy 7 may tell different affected times, so the keys differ.
    rows: list[tuple[int, int | None, int | None]] = [(1, None, None), (2, None, 7)]
    assert key(7, rows) != key(8, rows)
    # Entitlements under another policy do not matter, nor their order.
    assert (
        key(7, [(1, None, None), (3, 5, 9)])
        == key(7, [(3, 5, 9), (1, None, None)])
        == key(7, [(1, None, None)])
    )


def test_the_renderer_refuses_a_key_that_is_not_the_notices_own(gmail_2009) -> None:  # type: ignore[no-untyped-def]
    from credits import emails

    gmail, _ = gmail_2009
    builders.customer("Acme", policy=builders.workspace_policy(), products=[(gmail, None)])
    services.credits_compute(period="2009-09")
    notice = CreditNotice.objects.select_related("customer", "policy").get()
    renderer = emails.CreditNoticeRenderer()
    key = emails.notice_letter_key(notice)
    wrong = (*key[:-1], ((99, 0),))
    with pytest.raises(RuntimeError, match="letter key"):
        renderer.learn(wrong, notice)
    assert not renderer.knows(wrong)
    renderer.learn(key, notice)
    assert renderer.knows(key)
