"""Issue 28, finance without the admin: compute (and recompute) a month from the console's
credit review, see what changed, and get form errors for a bad or future month; the
review's totals, the letter preview's Reply-To and the CSV, as finance sees them."""

from __future__ import annotations

import csv
import html
import io
import re
from decimal import Decimal as D
from typing import Any

import pytest
from django.test import Client, TestCase
from django.urls import reverse
from django.utils import timezone

from credits import services
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState
from incidents.models import ImpactWindow
from outbox.models import OutboundMessage
from tests.builders import make_incident, make_location, make_product, utc
from tests.console.test_roles import member
from tests.credits import builders

pytestmark = pytest.mark.django_db

LONG_NAME = "Contoso Pharmaceuticals International Holdings and Worldwide Subsidiaries GmbH & Co. KG"


@pytest.fixture
def october(db: None) -> dict[str, Any]:
    storage, central = make_product("Cloud Storage"), make_location("us-central1")
    incident = make_incident(
        product=storage, location=central, start=utc(2026, 10, 8, 12, 0), end=utc(2026, 10, 9, 2, 0)
    )
    policy = builders.storage_policy()
    acme = builders.customer("Acme", policy=policy, products=[(storage, central)], monthly_bill=D("1000.00"))
    globex = builders.customer(
        LONG_NAME,
        policy=policy,
        products=[(storage, central)],
        monthly_bill=D("3000.00"),
        emails=["ap@contoso.example"],
    )
    return {"incident": incident, "acme": acme, "globex": globex}


def _compute(client: Client, period: str) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(reverse("console:credits_compute"), {"period": period, "shown": ""})


def _text(response: Any) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def test_finance_computes_a_month_from_the_review_page(client: Client, october: dict[str, Any]) -> None:
    fiona = member(client, "Finance", "fiona")
    page = client.get(reverse("console:credits"))
    assert page.status_code == 200
    body = page.content.decode()
    assert f'action="{reverse("console:credits_compute")}"' in body
    assert 'type="month"' in body and "Compute credits for" in body

    response = _compute(client, "2026-10")
    assert response.status_code == 302 and response["Location"].endswith("?period=2026-10")
    assert CreditNotice.objects.filter(period="2026-10", state=NoticeState.COMPUTED).count() == 2
    [entry] = CreditAuditEntry.objects.filter(action=AuditAction.COMPUTED)
    assert (entry.actor, entry.via, entry.period) == (fiona, "console", "2026-10")
    assert OutboundMessage.objects.count() == 0
    shown = _text(client.get(response["Location"]))
    assert "October 2026 computed: 2 customer(s) measured; notices created 2, updated 0" in shown
    assert "Nothing is sent until you review and send." in shown
    assert LONG_NAME in shown


def test_recomputing_refreshes_drafts_and_leaves_sent_notices_exactly_as_they_were(
    client: Client, october: dict[str, Any]
) -> None:
    member(client, "Finance", "fiona")
    _compute(client, "2026-10")
    acme = CreditNotice.objects.get(customer=october["acme"])
    services.credits_approve_and_send(confirmed=True, notices=[acme])
    OutboundMessage.objects.update(state="sent", sent_at=timezone.now())
    from credits.services.delivery import _on_notice_sent

    _on_notice_sent(OutboundMessage.objects.get())
    acme.refresh_from_db()
    assert acme.state == NoticeState.SENT
    before = {f.name: getattr(acme, f.name) for f in CreditNotice._meta.concrete_fields}
    other_before = CreditNotice.objects.get(customer=october["globex"]).downtime_minutes

    # The impact is corrected: a longer outage. Recomputing refreshes only the draft.
    ImpactWindow.objects.filter(incident=october["incident"]).update(ended_at=utc(2026, 10, 9, 8, 0))
    response = _compute(client, "2026-10")
    assert response.status_code == 302
    acme.refresh_from_db()
    assert {f.name: getattr(acme, f.name) for f in CreditNotice._meta.concrete_fields} == before
    other = CreditNotice.objects.get(customer=october["globex"])
    assert other.downtime_minutes > other_before and other.state == NoticeState.COMPUTED
    shown = _text(client.get(response["Location"]))
    assert "updated 1" in shown
    assert "1 already approved, sent or cancelled, left exactly as they were" in shown


@pytest.mark.parametrize(
    ("period", "error"),
    [
        ("bogus", "Give a month as YYYY-MM, for example 2026-10."),
        ("2026-13", "Give a month as YYYY-MM, for example 2026-10."),
        ("", "This field is required."),
        ("2999-01", "2999-01 has not started yet."),
    ],
)
def test_a_bad_or_future_month_is_a_form_error_and_computes_nothing(
    client: Client, october: dict[str, Any], period: str, error: str
) -> None:
    member(client, "Finance", "fiona")
    response = _compute(client, period)
    assert response.status_code == 400
    body = response.content.decode()
    assert re.search(r'class="field__error" role="alert">' + re.escape(error), body), body
    assert "field--error" in body
    assert CreditNotice.objects.count() == 0
    assert not CreditAuditEntry.objects.exists()


def test_only_roles_that_may_compute_see_or_use_the_form(client: Client, october: dict[str, Any]) -> None:
    member(client, "Viewer", "victor")
    assert "credits_compute" not in client.get(reverse("console:credits")).content.decode()
    assert 'type="month"' not in client.get(reverse("console:credits")).content.decode()
    response = _compute(client, "2026-10")
    assert response.status_code == 403
    assert CreditNotice.objects.count() == 0


def test_the_review_totals_money_per_currency_not_percentages(
    client: Client, october: dict[str, Any]
) -> None:
    member(client, "Finance", "fiona")
    _compute(client, "2026-10")
    shown = _text(client.get(reverse("console:credits") + "?period=2026-10"))
    assert "(sum)" not in shown and "% of bill" not in shown.split("Notices")[0]
    assert "USD 1000.00" in shown  # 25 % of 1000 plus 25 % of 3000


def test_the_letter_preview_shows_the_reply_address(
    client: Client, october: dict[str, Any], settings: Any
) -> None:
    member(client, "Finance", "fiona")
    _compute(client, "2026-10")
    notice = CreditNotice.objects.get(customer=october["acme"])
    url = reverse("console:credit_letter", args=[notice.pk])
    settings.CREDITS_REPLY_TO = ""
    shown = _text(client.get(url))
    assert "Reply-To none" in shown and "reply to this email" not in shown
    settings.CREDITS_REPLY_TO = "billing@example.com"
    shown = _text(client.get(url))
    assert "Reply-To billing@example.com" in shown
    assert "reply to this email" in shown and "replies go to our billing team at billing@example.com" in shown


def test_the_csv_export_never_dates_an_unsent_claim_in_the_past(
    client: Client, october: dict[str, Any]
) -> None:
    member(client, "Finance", "fiona")
    _compute(client, "2026-10")
    body = client.get(reverse("console:credits_export") + "?period=2026-10").content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == 2
    today = timezone.localdate()
    assert all(row["claim_deadline"] > today.isoformat() for row in rows)
