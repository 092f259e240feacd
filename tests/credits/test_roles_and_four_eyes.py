"""Who may touch credits (core.roles, checked in the services) and the four-eyes rule for
large sends; the credit letter preview escapes what the text template printed raw."""

from __future__ import annotations

import io
from decimal import Decimal as D
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.test import Client

from credits import confirm, services
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState, PreparedSend
from outbox.models import OutboundMessage
from tests.credits.test_review_and_send import storage_case

__all__ = ["storage_case"]


def _member(username: str, role: str) -> User:
    user = User.objects.create_user(username, is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- Roles ------------------------------------------------------------------------------------


def test_a_responder_is_refused_every_credits_write_and_nothing_changes(storage_case: dict[str, Any]) -> None:
    responder = _member("rita", "Responder")
    notice = storage_case["notice"]
    with pytest.raises(PermissionDenied, match="manage SLA customers"):
        services.customer_create(name="Evil", billing_emails=["x@example.org"], actor=responder)
    with pytest.raises(PermissionDenied, match="manage SLA policies"):
        services.policy_update(policy=notice.policy, changes={"cap": D(1)}, actor=responder)
    with pytest.raises(PermissionDenied, match="compute SLA credits"):
        services.credits_compute(period="2026-10", actor=responder)
    with pytest.raises(PermissionDenied, match="cancel and prepare"):
        services.credits_cancel(notice=notice, actor=responder)
    with pytest.raises(PermissionDenied, match="send SLA credit notices"):
        confirm.credits_send_confirmed(
            token=confirm.send_plan(ids=[notice.pk]).token, actor=responder, via="t"
        )
    notice.refresh_from_db()
    assert notice.state == NoticeState.COMPUTED
    assert OutboundMessage.objects.count() == 0


def test_the_console_hides_finance_buttons_and_refuses_their_posts(
    storage_case: dict[str, Any], fiona: User
) -> None:
    notice = storage_case["notice"]
    viewer = _client(_member("victor", "Viewer"))
    page = viewer.get(f"/manage/credits/{notice.pk}/")
    assert page.status_code == 200
    assert b"Cancel this notice" not in page.content and b"Send" not in page.content
    review = viewer.get("/manage/credits/?period=2026-10")
    assert b"Review and send" not in review.content and b"Export" not in review.content
    refused = viewer.post(f"/manage/credits/{notice.pk}/cancel/")
    assert refused.status_code == 403
    assert b"Your role does not allow you to review, cancel and prepare" in refused.content
    notice.refresh_from_db()
    assert notice.state == NoticeState.COMPUTED
    assert viewer.get(f"/manage/credits/confirm/?ids={notice.pk}").status_code == 403
    assert viewer.get("/manage/credits/export.csv?period=2026-10").status_code == 403
    finance = _client(fiona)
    page = finance.get(f"/manage/credits/{notice.pk}/")
    assert b"Cancel this notice" in page.content and b"Preview the letter" in page.content
    assert b"Review and send" in finance.get("/manage/credits/?period=2026-10").content


def test_the_api_refuses_a_responder_with_the_message(storage_case: dict[str, Any]) -> None:
    client = _client(_member("rita", "Responder"))
    answer = client.post(
        "/api/v1/credit-notices/approve/",
        {"period": "2026-10", "confirm": True},
        content_type="application/json",
    )
    assert answer.status_code == 403
    assert "send SLA credit notices" in answer.json()["detail"]
    assert OutboundMessage.objects.count() == 0


def test_the_command_sends_only_as_a_named_finance_user(storage_case: dict[str, Any]) -> None:
    _member("rita", "Responder")
    with pytest.raises(CommandError, match="--as"):
        call_command("sla_credits", "send", "--period", "2026-10", "--yes", stdout=io.StringIO())
    with pytest.raises(CommandError, match=r"Permission denied: .*send SLA credit notices"):
        call_command(
            "sla_credits", "send", "--period", "2026-10", "--yes", "--as", "rita", stdout=io.StringIO()
        )
    with pytest.raises(CommandError, match="no active user"):
        call_command(
            "sla_credits", "send", "--period", "2026-10", "--yes", "--as", "nobody", stdout=io.StringIO()
        )
    assert OutboundMessage.objects.count() == 0


# --- Four eyes ----------------------------------------------------------------------------------


@pytest.fixture
def four_eyes(settings: Any) -> None:
    # The storage case's notice is USD 250.00.
    settings.CREDITS_SECOND_APPROVER_ABOVE = D("100")


def test_a_large_send_needs_a_second_finance_user_in_the_console(
    storage_case: dict[str, Any],
    four_eyes: None,
    fiona: User,
    frank: User,
    django_capture_on_commit_callbacks: Any,
) -> None:
    notice = storage_case["notice"]
    first, second = _client(fiona), _client(frank)
    page = first.get(f"/manage/credits/confirm/?ids={notice.pk}")
    assert b"Prepare for a second approver" in page.content
    token = page.context["plan"].token
    answer = first.post("/manage/credits/send/", {"confirmation": token}, follow=True)
    assert b"Prepared by fiona" in answer.content and b"Nothing was sent" in answer.content
    assert OutboundMessage.objects.count() == 0
    assert PreparedSend.objects.get().prepared_by == fiona

    # The preparer sees who prepared it, no approve button, and is refused if she posts.
    page = first.get(f"/manage/credits/confirm/?ids={notice.pk}")
    assert b"data-prepared-by>fiona<" in page.content and b"Approve and send" not in page.content
    refused = first.post("/manage/credits/send/", {"confirmation": token})
    assert refused.status_code == 403
    assert b"a different Finance user must approve it" in refused.content
    assert OutboundMessage.objects.count() == 0

    page = second.get(f"/manage/credits/confirm/?ids={notice.pk}")
    assert b"data-prepared-by>fiona<" in page.content and b"Approve and send 1 letter now" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        second.post("/manage/credits/send/", {"confirmation": page.context["plan"].token})
    assert OutboundMessage.objects.count() == 1
    notice.refresh_from_db()
    assert notice.approved_by == frank
    prepared = PreparedSend.objects.get()
    assert (prepared.prepared_by, prepared.approved_by) == (fiona, frank)
    log = {(e.action, e.actor_label) for e in CreditAuditEntry.objects.all()}
    assert {
        (AuditAction.PREPARED, "fiona"),
        (AuditAction.REFUSED, "fiona"),
        (AuditAction.APPROVED, "frank"),
    } <= log
    approved = CreditAuditEntry.objects.get(action=AuditAction.APPROVED)
    assert "prepared by fiona" in approved.detail

    # Posting the same confirmation again sends nothing twice.
    second.post("/manage/credits/send/", {"confirmation": page.context["plan"].token})
    assert OutboundMessage.objects.count() == 1


def test_a_large_send_needs_a_second_finance_user_in_the_api(
    storage_case: dict[str, Any], four_eyes: None, fiona: User, frank: User
) -> None:
    body = {"period": "2026-10", "confirm": True}
    first = _client(fiona).post("/api/v1/credit-notices/approve/", body, content_type="application/json")
    assert first.status_code == 200
    assert first.json() == {
        "queued": 0,
        "retried": 0,
        "skipped": 0,
        "awaiting_approval": True,
        "prepared_by": "fiona",
    }
    preview = _client(frank).post(
        "/api/v1/credit-notices/send-preview/", {"period": "2026-10"}, content_type="application/json"
    )
    assert preview.json()["needs_second_approver"] and preview.json()["prepared_by"] == "fiona"
    again = _client(fiona).post("/api/v1/credit-notices/approve/", body, content_type="application/json")
    assert again.status_code == 403
    assert "a different Finance user must approve it" in again.json()["detail"]
    assert OutboundMessage.objects.count() == 0
    sent = _client(frank).post("/api/v1/credit-notices/approve/", body, content_type="application/json")
    assert sent.status_code == 200 and sent.json()["queued"] == 1
    assert OutboundMessage.objects.count() == 1


def test_a_large_send_needs_two_users_in_the_command(
    storage_case: dict[str, Any], four_eyes: None, fiona: User, frank: User
) -> None:
    out = io.StringIO()
    call_command("sla_credits", "send", "--period", "2026-10", "--yes", "--as", "fiona", stdout=out)
    assert "prepared by fiona; nothing was sent" in out.getvalue()
    with pytest.raises(CommandError, match="a different Finance user must approve it"):
        call_command(
            "sla_credits", "send", "--period", "2026-10", "--yes", "--as", "fiona", stdout=io.StringIO()
        )
    assert OutboundMessage.objects.count() == 0
    call_command("sla_credits", "send", "--period", "2026-10", "--yes", "--as", "frank", stdout=io.StringIO())
    assert OutboundMessage.objects.count() == 1
    assert CreditNotice.objects.get().approved_by == frank


def test_the_system_cannot_be_either_pair_of_eyes(storage_case: dict[str, Any], four_eyes: None) -> None:
    token = confirm.send_plan(ids=[storage_case["notice"].pk]).token
    with pytest.raises(PermissionDenied, match="two named Finance users"):
        confirm.credits_send_confirmed(token=token, actor=None, via="test")
    assert OutboundMessage.objects.count() == 0


def test_a_limit_of_zero_turns_four_eyes_off(
    storage_case: dict[str, Any], settings: Any, fiona: User
) -> None:
    settings.CREDITS_SECOND_APPROVER_ABOVE = D("0")
    token = confirm.send_plan(ids=[storage_case["notice"].pk]).token
    summary = confirm.credits_send_confirmed(token=token, actor=fiona, via="test")
    assert summary.queued == 1 and not summary.awaiting_approval
    assert PreparedSend.objects.count() == 0


def test_a_recomputed_notice_makes_a_preparation_stale(
    storage_case: dict[str, Any], four_eyes: None, fiona: User, frank: User
) -> None:
    notice = storage_case["notice"]
    token = confirm.send_plan(ids=[notice.pk]).token
    assert confirm.credits_send_confirmed(token=token, actor=fiona, via="test").awaiting_approval
    CreditNotice.objects.filter(pk=notice.pk).update(credit_amount=D("300.00"))
    fresh = confirm.send_plan(ids=[notice.pk])
    assert fresh.prepared is None  # frank's press prepares the new figures, sends nothing
    assert confirm.credits_send_confirmed(token=fresh.token, actor=frank, via="test").awaiting_approval
    assert OutboundMessage.objects.count() == 0


# --- The letter preview escapes the text part ------------------------------------------------------


def test_the_plain_text_letter_preview_escapes_the_customer_name(
    storage_case: dict[str, Any], fiona: User
) -> None:
    acme = storage_case["acme"]
    acme.name = "<script>alert(1)</script>"
    acme.save(update_fields=["name"])
    page = _client(fiona).get(f"/manage/credits/{storage_case['notice'].pk}/letter/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Dear &lt;script&gt;alert(1)&lt;/script&gt; billing contact" in text
    assert "<script>alert(1)" not in text
