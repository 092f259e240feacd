"""Policy changes over time (issue 35, part 4): versions from a date, a month computed with
each version for its days, the cap per month across incidents, the refusal to reach into
a month already sent, the API fields and the console page. Expectations are worked by
hand in the comments."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.test import Client

from credits import emails, selectors, services, sla, sla_measured
from credits.models import POLICY_EPOCH, CreditNotice, NoticeState, SLAPolicy, SLAPolicyVersion
from incidents.intervals import Interval
from tests.api.keys import key_for
from tests.builders import make_incident, make_product, utc
from tests.credits import builders

MARCH_END = utc(2026, 4, 2)


def _member(username: str, role: str) -> User:
    user = User.objects.create_user(username, is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


def _policy(**kw: Any) -> SLAPolicy:
    # UTC months keep the arithmetic by hand simple: March 2026 is 44640 minutes.
    params: dict[str, Any] = {
        "name": "Storage",
        "target": D("99.9"),
        "tiers": [(D("99.9"), D(10)), (D("99.0"), D(25))],
        "unit": SLAPolicy.Unit.PERCENT,
        "time_zone": "UTC",
    }
    params.update(kw)
    return services.policy_create(**params)


def _outage(start: datetime, minutes: int) -> tuple[datetime, datetime]:
    return start, start + timedelta(minutes=minutes)


# Downtime on both sides of a change on 16 March 2026 (00:00 UTC):
# - 5 March 10:00-10:30, 30 min, before it;
# - 15 March 23:55 to 16 March 00:10, 15 min across it: 5 before, 10 after;
# - 20 March 12:00-12:05, 5 min, after it.
MARCH_OUTAGES = [
    _outage(utc(2026, 3, 5, 10), 30),
    _outage(utc(2026, 3, 15, 23, 55), 15),
    _outage(utc(2026, 3, 20, 12), 5),
]


@pytest.fixture
def march(db: None) -> dict[str, Any]:
    storage = make_product("Cloud Storage", slug="cloud-storage")
    policy = _policy()
    acme = builders.customer("Acme", policy=policy, products=[(storage, None)], monthly_bill=D(1000))
    incidents = [
        make_incident(title=f"Outage {n}", product=storage, start=start, end=end)
        for n, (start, end) in enumerate(MARCH_OUTAGES, start=1)
    ]
    return {"policy": policy, "customer": acme, "incidents": incidents, "product": storage}


def _stricter_from_the_16th(policy: SLAPolicy, **kw: Any) -> SLAPolicyVersion:
    return services.policy_add_version(
        policy=policy,
        effective_from=date(2026, 3, 16),
        changes={"target": D("99.95")},
        tiers=[(D("99.95"), D(20)), (D("99.0"), D(25))],
        **kw,
    )


# --- The computation ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_change_in_the_middle_of_a_month_computes_each_version_for_its_days(march: dict[str, Any]) -> None:
    policy = march["policy"]
    _stricter_from_the_16th(policy)

    services.credits_compute(period="2026-03", now=MARCH_END)

    notice = CreditNotice.objects.get()
    # 1-15 March, 21600 min, under 99.9 % / 10 %: 30 + 5 = 35 min down,
    #   100 x 21565 / 21600 = 99.83796 % < 99.9 -> 10 %, for 15 of 31 days: 150/31 = 4.8387.
    # 16-31 March, 23040 min, under 99.95 % / 20 %: 10 + 5 = 15 min down,
    #   100 x 23025 / 23040 = 99.93489 % < 99.95 -> 20 %, for 16 of 31 days: 320/31 = 10.3226.
    # The month: 470/31 = 15.1613 -> 15.16 %; 50 min down of 44640: 99.88799 -> 99.8879.
    # (Under the old terms alone it would be 10 %, under the new alone 20 %.)
    assert (notice.credit, notice.downtime_minutes, notice.uptime_percent) == (
        D("15.16"),
        D("50.00"),
        D("99.8879"),
    )
    assert notice.credit_amount == D("151.61")  # 15.1613 % of 1000
    first, second = notice.versions
    assert (first["effective_from"], first["target"], first["downtime_minutes"]) == (
        "1970-01-01",
        "99.9",
        "35.00",
    )
    assert (first["uptime_percent"], first["tier_credit"], first["credit"]) == ("99.8379", "10.00", "4.84")
    assert (second["effective_from"], second["target"], second["downtime_minutes"]) == (
        "2026-03-16",
        "99.95",
        "15.00",
    )
    assert (second["uptime_percent"], second["tier_credit"], second["credit"]) == (
        "99.9348",
        "20.00",
        "10.32",
    )
    assert set(notice.incidents.all()) == set(march["incidents"])
    # Computing again changes nothing.
    again = services.credits_compute(period="2026-03", now=MARCH_END)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 1)


@pytest.mark.django_db
def test_a_month_wholly_before_a_change_keeps_the_old_terms(march: dict[str, Any]) -> None:
    policy = march["policy"]
    services.policy_add_version(
        policy=policy, effective_from=date(2026, 4, 1), changes={"target": D("99.99")}
    )
    services.credits_compute(period="2026-03", now=MARCH_END)
    notice = CreditNotice.objects.get()
    # 50 min of 44640 under 99.9 % alone: 99.888 % -> 10 %, one version.
    assert notice.credit == D("10.00")
    assert [v["effective_from"] for v in notice.versions] == ["1970-01-01"]
    policy.refresh_from_db()
    assert policy.target == D("99.99")  # the row mirrors its newest version
    # From May no outage under an hour counts: March's statement and the notice's
    # breakdown still count its 50 minutes under the terms that ruled it.
    services.policy_add_version(
        policy=policy, effective_from=date(2026, 5, 1), changes={"min_downtime_minutes": 60}
    )
    ((_, _, line),) = selectors.notice_entitlements_for_customer(march["customer"], sla.Period(2026, 3))
    assert line.downtime_minutes == D(50)
    assert selectors.notice_breakdown(notice).total_rounded == D("50.00")


def test_measured_downtime_is_split_at_the_change_instant() -> None:
    declared_only = sla.Policy(
        target=D("99.9"),
        time_zone="UTC",
        weights=(("major_outage", D(1)),),
        tiers=(sla.Tier(D("99.9"), D(10)),),
    )
    definition = sla_measured.Definition(down_above=D(5))
    old = sla_measured.Version(POLICY_EPOCH, declared_only, sla_measured.SOURCE_MEASURED, definition)
    new = sla_measured.Version(date(2026, 3, 16), declared_only, sla_measured.SOURCE_MEASURED, definition)
    # Measured down 15 March 23:40 to 16 March 00:20: 20 min on each side of the change.
    reading = sla_measured.MeasuredResult(
        D(40), (Interval(utc(2026, 3, 15, 23, 40), utc(2026, 3, 16, 0, 20)),), (), ()
    )
    got = sla_measured.compute_versioned([], [old, new], sla.Period(2026, 3), measured=[reading, reading])
    assert [p.result.downtime_minutes for p in got.parts] == [D(20), D(20)]
    assert [p.sourced.source for p in got.parts if p.sourced] == ["measured", "measured"]
    # 20 min of 21600 (99.907 %) and of 23040 (99.913 %): both above 99.9, no credit.
    assert got.credit == 0 and got.as_result().downtime_minutes == D(40)


@pytest.mark.django_db
def test_three_incidents_in_a_month_never_exceed_the_cap(db: None) -> None:
    storage = make_product("Cloud Storage", slug="cloud-storage")
    policy = _policy(tiers=[(D("99.9"), D(10)), (D("99.0"), D(25)), (D("95.0"), D(50))], cap=D(30))
    builders.customer("Acme", policy=policy, products=[(storage, None)])
    for day in (2, 12, 22):
        make_incident(
            title=f"Outage {day}", product=storage, start=utc(2026, 4, day), end=utc(2026, 4, day, 13)
        )
    # April 2026: 43200 min. Each incident alone is 780 min: 98.19 % -> 25 %. Together
    # 2340 min: 94.58 % -> the 50 % band, held to the 30 % cap (not 3 x 25 = 75 %).
    services.credits_compute(period="2026-04", now=utc(2026, 5, 2))
    notice = CreditNotice.objects.get()
    assert (notice.downtime_minutes, notice.uptime_percent, notice.credit) == (
        D("2340.00"),
        D("94.5833"),
        D(30),
    )
    assert notice.incidents.count() == 3
    # A version from 16 April lowers the cap to 20: 1-15 April hold 1560 min (92.78 %:
    # 50 % x 15/30 = 25), 16-30 April 780 min (96.39 %: 25 % x 15/30 = 12.5); 37.5, held
    # once for the month to the cap in force at its end: 20.
    services.policy_add_version(policy=policy, effective_from=date(2026, 4, 16), changes={"cap": D(20)})
    services.credits_compute(period="2026-04", now=utc(2026, 5, 2))
    notice.refresh_from_db()
    assert notice.credit == D(20)
    assert [v["credit"] for v in notice.versions] == ["25.00", "12.50"]


# --- Writing versions -------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_change_reaching_into_a_sent_month_is_refused(march: dict[str, Any]) -> None:
    policy = march["policy"]
    services.credits_compute(period="2026-03", now=MARCH_END)
    CreditNotice.objects.update(state=NoticeState.SENT, sent_at=MARCH_END)
    with pytest.raises(ValidationError) as refused:
        _stricter_from_the_16th(policy)
    message = " ".join(refused.value.message_dict["effective_from"])
    assert "2026-03" in message and "on or after 2026-04-01" in message
    # An edit in place amends the newest version (from the epoch): refused too.
    with pytest.raises(ValidationError, match="already been approved or sent"):
        services.policy_update(policy=policy, changes={"target": D("99.95")})
    policy.refresh_from_db()
    assert policy.target == D("99.9")
    assert SLAPolicyVersion.objects.filter(policy=policy).count() == 1
    # A name is no term: it still changes.
    services.policy_update(policy=policy, changes={"description": "Regional buckets"})
    # From the first day after the sent month, the change is taken.
    version = services.policy_add_version(
        policy=policy, effective_from=date(2026, 4, 1), changes={"target": D("99.95")}
    )
    assert version.terms["target"] == "99.950"
    with pytest.raises(ValidationError, match="already starts on that day"):
        services.policy_add_version(policy=policy, effective_from=date(2026, 4, 1), changes={"cap": D(5)})
    with pytest.raises(ValidationError, match="nothing would change"):
        services.policy_add_version(
            policy=policy, effective_from=date(2026, 5, 1), changes={"target": D("99.95")}
        )
    with pytest.raises(ValidationError) as bad:
        services.policy_add_version(
            policy=policy, effective_from=date(2026, 6, 1), changes={"target": D(120)}
        )
    assert "target" in bad.value.message_dict
    assert SLAPolicyVersion.objects.filter(policy=policy).count() == 2


@pytest.mark.django_db
def test_a_responder_cannot_add_a_version(march: dict[str, Any]) -> None:
    with pytest.raises(PermissionDenied):
        _stricter_from_the_16th(march["policy"], actor=_member("rita", "Responder"))
    assert SLAPolicyVersion.objects.count() == 1


# --- The letter --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_letter_names_the_versions_when_the_month_spans_a_change(march: dict[str, Any]) -> None:
    _stricter_from_the_16th(march["policy"])
    services.credits_compute(period="2026-03", now=MARCH_END)
    notice = CreditNotice.objects.get()
    _, text, html = emails.render_credit_notice(notice)
    for body in (text, html):
        assert "terms changed during the month" in body
        assert "2026-03-01 to 2026-03-15: target 99.9%, uptime 99.83%, credit 4.84%" in body
        assert "2026-03-16 to 2026-03-31: target 99.95%, uptime 99.93%, credit 10.32%" in body
    # The intro names the target in force at the month's end.
    assert "fell short of the 99.95% monthly uptime" in text
    # The statement says it too.
    client = Client()
    client.force_login(_member("fiona", "Finance"))
    page = client.get(f"/manage/customers/{notice.customer_id}/statement/?period=2026-03").content.decode()
    assert "each version applied to its own days" in page
    assert "2026-03-16 to 2026-03-31: target 99.95%, uptime 99.93%, credit 10.32%" in page
    customer = notice.customer
    customer.language = "fr"
    customer.save()
    _, text_fr, _ = emails.render_credit_notice(CreditNotice.objects.get())
    assert "Les conditions de votre contrat ont changé au cours du mois" in text_fr
    assert "objectif 99,95\u00a0%" in text_fr


@pytest.mark.django_db
def test_a_month_under_one_version_letter_is_unchanged(march: dict[str, Any]) -> None:
    services.credits_compute(period="2026-03", now=MARCH_END)
    _, text, _ = emails.render_credit_notice(CreditNotice.objects.get())
    assert "terms changed" not in text


# --- API ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_shows_effective_from_and_the_versions(client: Client, march: dict[str, Any]) -> None:
    policy = march["policy"]
    _stricter_from_the_16th(policy)
    alice = User.objects.create_user("alice", is_staff=True, is_superuser=True)
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Token {key_for(alice)}"}
    got = client.get(f"/api/v1/sla-policies/{policy.pk}/", **auth).json()
    assert got["effective_from"] == "2026-03-16"
    assert got["target"] == "99.950"
    assert [v["effective_from"] for v in got["versions"]] == ["1970-01-01", "2026-03-16"]
    assert got["versions"][0]["terms"]["target"] == "99.900"
    assert got["versions"][1]["tiers"] == [
        {"below": "99.950", "credit": "20.00"},
        {"below": "99.000", "credit": "25.00"},
    ]
    # Read only, as `id` is: sending them changes nothing (a change from a date is the
    # console's).
    ignored = client.patch(
        f"/api/v1/sla-policies/{policy.pk}/",
        {"effective_from": "2020-01-01", "versions": []},
        content_type="application/json",
        **auth,
    )
    assert ignored.status_code == 200
    assert ignored.json()["effective_from"] == "2026-03-16" and len(ignored.json()["versions"]) == 2
    # A PATCH of the terms amends the newest version.
    patched = client.patch(
        f"/api/v1/sla-policies/{policy.pk}/", {"cap": "40"}, content_type="application/json", **auth
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["versions"][1]["terms"]["cap"] == "40.00"
    assert patched.json()["versions"][0]["terms"]["cap"] is None
    # Once March (which the newest version rules from the 16th) is sent, a PATCH of the
    # terms is refused with the reason, and changes nothing.
    services.credits_compute(period="2026-03", now=MARCH_END)
    CreditNotice.objects.update(state=NoticeState.SENT, sent_at=MARCH_END)
    refused = client.patch(
        f"/api/v1/sla-policies/{policy.pk}/", {"cap": "45"}, content_type="application/json", **auth
    )
    assert refused.status_code == 400
    assert "already been approved or sent" in refused.content.decode()
    assert client.get(f"/api/v1/sla-policies/{policy.pk}/", **auth).json()["cap"] == "40.00"


# --- Console -----------------------------------------------------------------------------------


def _form(**kw: str) -> dict[str, str]:
    data = {
        "effective_from": "2026-03-16",
        "target": "99.95",
        "tiers": "99.95: 20\n99: 25",
        "cap": "",
        "min_downtime_minutes": "0",
        "exclude_maintenance": "on",
        "downtime_source": "declared",
        "measured_down_above": "5",
    }
    data.update(kw)
    return data


@pytest.mark.django_db
def test_finance_adds_a_version_in_the_console(march: dict[str, Any]) -> None:
    policy = march["policy"]
    client = Client()
    client.force_login(_member("fiona", "Finance"))
    url = f"/manage/credits/policies/{policy.pk}/"
    page = client.get(url)
    assert page.status_code == 200
    assert b"Terms over time" in page.content and b"Change the terms from a day" in page.content
    bad = client.post(url, _form(tiers="ninety-nine: ten"))
    assert bad.status_code == 400 and b"Line 1: write the uptime threshold" in bad.content
    bad_day = client.post(url, _form(effective_from="1970-01-01"))
    assert bad_day.status_code == 400 and b"already starts on that day" in bad_day.content
    assert SLAPolicyVersion.objects.filter(policy=policy).count() == 1
    done = client.post(url, _form())
    assert done.status_code == 302
    version = SLAPolicyVersion.objects.get(policy=policy, effective_from=date(2026, 3, 16))
    assert version.terms["target"] == "99.950" and version.tiers == [["99.950", "20.00"], ["99.000", "25.00"]]
    assert version.created_by == "fiona"
    shown = client.get(url).content.decode()
    assert "2026-03-16" in shown and "2026-03-15" in shown  # the old version now ends the day before
    # Reaching into a sent month: the form says why, nothing is added.
    services.credits_compute(period="2026-03", now=MARCH_END)
    CreditNotice.objects.update(state=NoticeState.SENT, sent_at=datetime(2026, 4, 2, tzinfo=UTC))
    refused = client.post(url, _form(effective_from="2026-03-20", target="99.99"))
    assert refused.status_code == 400 and b"on or after 2026-04-01" in refused.content
    assert SLAPolicyVersion.objects.filter(policy=policy).count() == 2


@pytest.mark.django_db
def test_a_responder_is_refused_the_policy_page(march: dict[str, Any]) -> None:
    policy = march["policy"]
    client = Client()
    client.force_login(_member("rita", "Responder"))
    url = f"/manage/credits/policies/{policy.pk}/"
    assert client.get(url).status_code == 403
    assert client.post(url, _form()).status_code == 403
    assert SLAPolicyVersion.objects.filter(policy=policy).count() == 1


@pytest.mark.django_db
def test_the_command_computes_each_version_for_its_days(march: dict[str, Any]) -> None:
    _stricter_from_the_16th(march["policy"])
    out = io.StringIO()
    call_command("sla_credits", "compute", "--period", "2026-03", "--json", stdout=out, stderr=io.StringIO())
    (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
    assert line["credit"] == "15.16"
    assert [v["effective_from"] for v in line["versions"]] == ["1970-01-01", "2026-03-16"]
    text = io.StringIO()
    call_command("sla_credits", "compute", "--period", "2026-03", stdout=text, stderr=io.StringIO())
    assert "(2 policy versions)" in text.getvalue()
