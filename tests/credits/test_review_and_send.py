"""Issue 14: explain, preview, confirm, audit, claim deadline, the letter, CSV exports."""

from __future__ import annotations

import csv
import io
from datetime import date, timedelta
from decimal import Decimal as D
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from credits import emails, explain, selectors, services, sla
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState
from incidents.models import ImpactWindow, Incident
from incidents.services.reports import report_publish, report_save
from outbox.models import OutboundMessage
from tests.builders import approve_report, make_incident, make_location, make_product, utc
from tests.credits import builders

pytestmark = pytest.mark.django_db
Level = ImpactWindow.Level


def _window(
    incident: Incident,
    product: Any,
    start: Any,
    end: Any,
    *,
    level: str = Level.MAJOR_OUTAGE,
    location: Any = None,
) -> ImpactWindow:
    return ImpactWindow.objects.create(
        incident=incident, product=product, location=location, level=level, started_at=start, ended_at=end
    )


@pytest.fixture
def storage_case(db: None) -> dict[str, Any]:
    """Cloud Storage in two regions: the incident lasts longer than one customer's part."""
    gcs = make_product("Cloud Storage")
    central = make_location("us-central1")
    east = make_location("us-east1")
    policy = builders.storage_policy(claim_window_days=30)
    # Central down 12:00-20:00 UTC on 8 Oct; east down 16:00-02:00 (10 h); the incident 14 h.
    incident = make_incident(
        title="Cloud Storage write errors",
        product=gcs,
        location=central,
        start=utc(2026, 10, 8, 12, 0),
        end=utc(2026, 10, 9, 2, 0),
    )
    ImpactWindow.objects.filter(incident=incident).update(ended_at=utc(2026, 10, 8, 20, 0))
    _window(incident, gcs, utc(2026, 10, 8, 16, 0), utc(2026, 10, 9, 2, 0), location=east)
    acme = builders.customer("Acme", policy=policy, products=[(gcs, central)], monthly_bill=D("1000.00"))
    services.credits_compute(period="2026-10")
    notice = CreditNotice.objects.get(customer=acme)
    return {"incident": incident, "notice": notice, "acme": acme, "gcs": gcs, "central": central}


# --- The breakdown ------------------------------------------------------------------------------


def test_the_breakdown_of_the_demo_notices_sums_to_each_notice() -> None:
    call_command("load_demo", stdout=io.StringIO())
    for period in ("2009-09", "2026-10"):
        services.credits_compute(period=period)
    notices = list(CreditNotice.objects.select_related("customer", "policy"))
    gmail = [n for n in notices if n.period == "2009-09"]
    assert gmail, "the demo has 2009-09 Gmail notices"
    for notice in notices:
        breakdown = selectors.notice_breakdown(notice)
        assert breakdown.total_rounded == notice.downtime_minutes, notice
        assert sum(line.minutes for line in breakdown.counted) == breakdown.total
        assert breakdown.counted, notice
    # The demo's Cloud Storage customer in us-central1 only: its own part of the incident,
    # and why the incident's 18 h 11 min is not its first-to-last 1 d 5 h 46 min.
    adventure = next(n for n in notices if n.customer.name == "Adventure Works")
    assert adventure.downtime_minutes == D("750.00")
    _, text, html = emails.preview_credit_notice(adventure, today=date(2026, 12, 1))
    for body in (text, html):
        flat = " ".join(body.replace("<strong>", "").replace("</strong>", "").split())
        assert "Your products and regions: 12 h 30 min of the incident's 18 h 11 min" in flat
        assert "open 1 d 5 h 46 min in all" in " ".join(body.split())


def test_the_breakdown_gives_overlaps_maintenance_blips_entitlement_and_the_month() -> None:
    gmail = make_product("Gmail")
    drive = make_product("Drive")
    policy = builders.workspace_policy(min_downtime_minutes=10)
    acme = builders.customer("Acme", policy=policy, products=[(gmail, None)])
    # 60 min major, overlapped by 30 min partial inside it (the overlap is charged once).
    outage = make_incident(product=gmail, start=utc(2009, 9, 10, 10, 0), end=utc(2009, 9, 10, 11, 0))
    overlap = _window(
        outage, gmail, utc(2009, 9, 10, 10, 30), utc(2009, 9, 10, 11, 30), level=Level.PARTIAL_OUTAGE
    )
    drive_window = _window(outage, drive, utc(2009, 9, 10, 10, 0), utc(2009, 9, 10, 12, 0))
    blip = make_incident(
        title="Blip", product=gmail, start=utc(2009, 9, 12, 8, 0), end=utc(2009, 9, 12, 8, 5)
    )
    maint = make_incident(
        title="Upgrade", product=gmail, start=utc(2009, 9, 15, 8, 0), end=utc(2009, 9, 15, 10, 0)
    )
    Incident.objects.filter(pk=maint.pk).update(
        kind=Incident.Kind.MAINTENANCE,
        status="completed",
        scheduled_for=utc(2009, 9, 15, 8, 0),
        scheduled_until=utc(2009, 9, 15, 10, 0),
    )
    # 30 Sep 23:30 to 1 Oct 00:30 Pacific: half of it in the month, and the stretch is
    # 60 minutes long, so it is not a blip even though only 30 minutes fall in September.
    edge = make_incident(
        title="Edge", product=gmail, start=utc(2009, 10, 1, 6, 30), end=utc(2009, 10, 1, 7, 30)
    )
    after = make_incident(
        title="October", product=gmail, start=utc(2009, 10, 1, 8, 0), end=utc(2009, 10, 1, 9, 0)
    )
    services.credits_compute(period="2009-09")
    notice = CreditNotice.objects.get(customer=acme)
    breakdown = selectors.notice_breakdown(notice)

    assert breakdown.total_rounded == notice.downtime_minutes
    # 60 (major) + 30 min of the partial outside the major, at weight 1 + 30 (edge).
    assert notice.downtime_minutes == D("120.00")
    by_id = {line.id: line for line in (*breakdown.counted, *breakdown.not_counted)}
    major = ImpactWindow.objects.get(incident=outage, product=gmail, level=Level.MAJOR_OUTAGE)
    assert by_id[major.pk].minutes == D(60)
    assert by_id[overlap.pk].minutes == D(30)  # the half hour the major window did not cover
    assert by_id[drive_window.pk].reason == explain.NOT_ENTITLED
    assert by_id[blip.windows.get().pk].reason == explain.BLIP
    assert by_id[maint.windows.get().pk].reason == explain.MAINTENANCE
    assert by_id[edge.windows.get().pk].minutes == D(30)
    assert by_id[after.windows.get().pk].reason == explain.OUTSIDE
    assert sum(line.minutes_rounded for line in breakdown.counted) == notice.downtime_minutes


def test_the_pure_breakdown_matches_the_sla_maths() -> None:
    policy = sla.Policy(
        target=D("99.9"),
        time_zone="UTC",
        weights=(("major_outage", D(1)), ("partial_outage", D("0.3"))),
        tiers=(sla.Tier(D("99.9"), D(1)),),
        min_downtime_minutes=5,
    )
    period = sla.Period(2026, 3)
    outages = [
        sla.Outage(utc(2026, 3, 1, 0, 0), utc(2026, 3, 1, 2, 0), "partial_outage", incident_id=1),
        sla.Outage(utc(2026, 3, 1, 1, 0), utc(2026, 3, 1, 1, 30), "major_outage", incident_id=2),
        sla.Outage(utc(2026, 3, 2, 0, 0), utc(2026, 3, 2, 0, 3), "major_outage", incident_id=3),
    ]
    start, end = period.bounds("UTC")
    expected, _ = sla.weighted_downtime(outages, policy, start=start, end=end)
    got = explain.explain(
        [explain.WindowInput(i, "P", "", True, o) for i, o in enumerate(outages, 1)], policy, period
    )
    assert got.total == expected == D(90) * D("0.3") + D(30)


# --- The claim deadline and the letter ----------------------------------------------------------------


def test_the_claim_deadline_follows_the_sending_day(
    storage_case: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    notice = storage_case["notice"]
    plan = _plan([notice.pk])
    with django_capture_on_commit_callbacks(execute=True):
        from credits import confirm

        confirm.credits_send_confirmed(token=plan.token, actor=None, via="test")
    notice.refresh_from_db()
    today = timezone.now().astimezone(__import__("zoneinfo").ZoneInfo("US/Pacific")).date()
    assert notice.claim_deadline == today + timedelta(days=30)
    assert notice.claim_deadline > today  # an October letter sent in December is not already past
    message = OutboundMessage.objects.get(pk=notice.message_id)
    assert notice.claim_deadline.isoformat() in message.content()[1]


def _plan(ids: list[int]) -> Any:
    from credits import confirm

    return confirm.send_plan(ids=ids)


def test_the_letter_gives_the_customers_own_minutes_and_the_published_report(
    storage_case: dict[str, Any],
) -> None:
    notice, incident = storage_case["notice"], storage_case["incident"]
    _, text, html = emails.preview_credit_notice(notice, today=date(2026, 12, 1))
    text = " ".join(text.split())  # read across the wrapping
    assert "Your products and regions: 8 h of the incident's 14 h" in text
    assert "8 h</strong> of the incident's 14 h" in html
    assert "What happened:" not in text  # no report yet
    assert "2026-12-31" in text  # 30 days after the sending day
    report_save(
        incident=incident,
        summary="A configuration push overloaded the metadata service. Writes failed for some buckets.",
        root_cause="A **quota** change was rolled out to all regions at once.",
        remediation="Quota changes now roll out one region at a time, with automatic rollback.",
    )
    _, text, html = emails.preview_credit_notice(notice, today=date(2026, 12, 1))
    assert "configuration push" not in text  # a draft report is not quoted
    approve_report(incident)
    report_publish(incident=incident)
    _, text, html = emails.preview_credit_notice(notice, today=date(2026, 12, 1))
    text = " ".join(text.split())
    for body in (text, html):
        assert "A configuration push overloaded the metadata service." in body
        assert "A quota change was rolled out to all regions at once." in body
        assert "one region at a time" in body
        assert f"/incidents/{incident.public_id}/" in body
        assert "sorry" in body
        # No CREDITS_REPLY_TO: the letter says how to reach billing instead of "reply".
        assert "reply to this email" not in body and "through your usual billing contact" in body
    assert "Full incident report:" in text


# --- Nothing is sent without confirmation ----------------------------------------------------------


def test_the_service_refuses_to_send_unconfirmed(storage_case: dict[str, Any]) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        services.credits_approve_and_send(notices=[storage_case["notice"]])
    assert OutboundMessage.objects.count() == 0


def test_the_console_sends_only_after_the_confirmation_page(
    staff_client: Client, storage_case: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    notice = storage_case["notice"]
    review = staff_client.get("/manage/credits/?period=2026-10")
    assert review.status_code == 200
    assert b"Acme" in review.content and b"USD 250.00" in review.content
    # A POST to send without (or with a forged) confirmation sends nothing.
    for data in ({}, {"confirmation": "forged"}):
        response = staff_client.post("/manage/credits/send/", data)
        assert response.status_code == 302
    assert OutboundMessage.objects.count() == 0
    page = staff_client.get(f"/manage/credits/confirm/?ids={notice.pk}")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Send 1 credit letter?" in body and "USD 250.00" in body and "billing@acme.example" in body
    assert OutboundMessage.objects.count() == 0
    token = page.context["plan"].token
    # Recomputed with other figures since the page was shown: the token is stale.
    CreditNotice.objects.filter(pk=notice.pk).update(credit=D("30.00"))
    staff_client.post("/manage/credits/send/", {"confirmation": token})
    assert OutboundMessage.objects.count() == 0
    token = staff_client.get(f"/manage/credits/confirm/?ids={notice.pk}").context["plan"].token
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post("/manage/credits/send/", {"confirmation": token})
    assert OutboundMessage.objects.count() == 1
    assert CreditNotice.objects.get(pk=notice.pk).state in (NoticeState.QUEUED, NoticeState.SENT)


def test_the_api_needs_confirm_or_a_preview_token(
    client: Client, alice: Any, storage_case: dict[str, Any]
) -> None:
    from tests.api.keys import key_for

    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Token {key_for(alice)}"}
    notice = storage_case["notice"]
    refused = client.post(
        "/api/v1/credit-notices/approve/", {"ids": [notice.pk]}, content_type="application/json", **auth
    )
    assert refused.status_code == 400
    assert OutboundMessage.objects.count() == 0
    preview = client.post(
        "/api/v1/credit-notices/send-preview/", {"period": "2026-10"}, content_type="application/json", **auth
    )
    assert preview.status_code == 200
    plan = preview.json()
    assert plan["count"] == 1 and plan["money"] == [{"currency": "USD", "amount": "250.00"}]
    assert OutboundMessage.objects.count() == 0
    sent = client.post(
        "/api/v1/credit-notices/approve/",
        {"confirmation": plan["confirmation"]},
        content_type="application/json",
        **auth,
    )
    assert sent.status_code == 200 and sent.json()["queued"] == 1
    assert OutboundMessage.objects.count() == 1
    schema = client.get("/api/schema/", **auth) if False else None  # schema checked in test_schema
    assert schema is None


def test_the_command_asks_and_refuses_without_a_terminal(
    storage_case: dict[str, Any], monkeypatch: Any, fiona: User
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a TTY
    out = io.StringIO()
    with pytest.raises(CommandError, match="--yes"):
        call_command("sla_credits", "send", "--period", "2026-10", "--as", fiona.username, stdout=out)
    assert "1 letter(s)" in out.getvalue() and "billing@acme.example" in out.getvalue()
    assert OutboundMessage.objects.count() == 0

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty("no\n"))
    with pytest.raises(CommandError, match="Not sent"):
        call_command(
            "sla_credits", "send", "--period", "2026-10", "--as", fiona.username, stdout=io.StringIO()
        )
    assert OutboundMessage.objects.count() == 0
    monkeypatch.setattr("sys.stdin", Tty("yes\n"))
    call_command("sla_credits", "send", "--period", "2026-10", "--as", fiona.username, stdout=io.StringIO())
    assert OutboundMessage.objects.count() == 1


# --- The audit log ---------------------------------------------------------------------------------


def test_the_audit_log_records_each_step(
    staff_client: Client,
    alice: Any,
    storage_case: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    smtp: Any,
) -> None:
    notice = storage_case["notice"]
    token = staff_client.get(f"/manage/credits/confirm/?ids={notice.pk}").context["plan"].token
    staff_client.post("/manage/credits/send/", {"confirmation": "forged"})
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post("/manage/credits/send/", {"confirmation": token})
    smtp.handler.wait_for(1)
    steps = list(CreditAuditEntry.objects.order_by("at", "id").values_list("action", "actor_label", "via"))
    assert steps[0] == (AuditAction.COMPUTED, "", "")
    assert (AuditAction.PREVIEWED, alice.username, "console") in steps
    assert (AuditAction.REFUSED, alice.username, "console") in steps
    assert (AuditAction.APPROVED, alice.username, "console") in steps
    assert (AuditAction.SENT, "", "outbox") in steps
    approved = CreditAuditEntry.objects.get(action=AuditAction.APPROVED)
    assert approved.notice_id == notice.pk and "USD 250.00" in approved.detail
    # Cancelling another month's notice is logged too, and the console shows the log.
    other = CreditNotice.objects.create(
        customer=notice.customer,
        policy=notice.policy,
        period="2026-09",
        period_start=notice.period_start,
        period_end=notice.period_end,
        period_minutes=notice.period_minutes,
        downtime_minutes=D(1),
        uptime_percent=D(99),
        credit=D(10),
        unit=notice.unit,
        claim_deadline=date(2026, 12, 1),
        computed_at=timezone.now(),
    )
    staff_client.post(f"/manage/credits/{other.pk}/cancel/")
    assert CreditAuditEntry.objects.filter(
        action=AuditAction.CANCELLED, notice=other, actor_label=alice.username
    ).exists()
    page = staff_client.get(f"/manage/credits/{notice.pk}/").content.decode()
    assert "Approved and queued" in page and alice.username in page
    admin = staff_client.get("/admin/credits/creditauditentry/")
    assert admin.status_code == 200
    assert staff_client.get("/admin/credits/creditauditentry/add/").status_code == 403


# --- Exports ---------------------------------------------------------------------------------------


def test_the_exports_parse_and_add_up(
    client: Client, staff_client: Client, alice: Any, storage_case: dict[str, Any]
) -> None:
    from tests.api.keys import key_for

    gcs, central = storage_case["gcs"], storage_case["central"]
    for i in range(3):
        builders.customer(
            f"Beta {i}",
            policy=storage_case["notice"].policy,
            products=[(gcs, central)],
            monthly_bill=D("333.33"),
        )
    services.credits_compute(period="2026-10")
    notices = list(CreditNotice.objects.filter(period="2026-10"))
    response = staff_client.get("/manage/credits/export.csv?period=2026-10")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == len(notices) == 4
    assert (
        sum(D(r["credit_amount"]) for r in rows)
        == sum(n.credit_amount or D(0) for n in notices)
        == D("499.99")
    )
    assert sum(D(r["downtime_minutes"]) for r in rows) == sum(n.downtime_minutes for n in notices)
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Token {key_for(alice)}"}
    api = client.get("/api/v1/credit-notices/export/?period=2026-10", **auth)
    assert api.status_code == 200 and api.content == response.content

    acme = storage_case["acme"]
    statement = staff_client.get(f"/manage/customers/{acme.pk}/statement/?period=2026-10")
    assert statement.status_code == 200 and b"us-central1" in statement.content
    st_csv = staff_client.get(f"/manage/customers/{acme.pk}/statement/?period=2026-10&output=csv")
    st_rows = list(csv.DictReader(io.StringIO(st_csv.content.decode())))
    uptime = [r for r in st_rows if r["section"] == "uptime"]
    credit = [r for r in st_rows if r["section"] == "credit"]
    assert len(uptime) == 1 and uptime[0]["downtime_minutes"] == "480.00"
    assert D(credit[0]["credit_amount"]) == D("250.00")
    api_st = client.get(f"/api/v1/customers/{acme.pk}/statement/?period=2026-10", **auth)
    assert (
        api_st.status_code == 200
        and api_st.json()["lines"][0]["uptime_percent"] == uptime[0]["uptime_percent"]
    )
    api_csv = client.get(f"/api/v1/customers/{acme.pk}/statement/?period=2026-10&output=csv", **auth)
    assert api_csv.content == st_csv.content
