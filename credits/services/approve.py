"""Approving credit notices: one outbox email per notice, queued in the approval's own
transaction, so "approved" and "an email will go out" are one fact. See
docs/adr/0007-sla-credits.md."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core import bulk, roles
from credits import emails
from credits.models import CreditNotice, NoticeState
from credits.services._common import OUTBOX_PURPOSE, Progress, chunks, claim_deadline_on, notice_outbox_key
from credits.services.delivery import mark_sent
from credits.services.letters import Chunk, NoticeRow, letters, lock_chunk
from outbox import services as outbox
from outbox.models import MessageState

_Spec = outbox.EmailSpec | outbox.SharedEmailSpec


@dataclass
class SendSummary:
    queued: int = 0
    retried: int = 0
    skipped: int = 0
    # A four-eyes send that was prepared, not sent: it waits for a second Finance user.
    awaiting_approval: bool = False
    prepared_by: str = ""


def credits_approve_and_send(
    *,
    notices: Iterable[CreditNotice],
    actor: AbstractBaseUser | None = None,
    progress: Progress | None = None,
    confirmed: bool = False,
) -> SendSummary:
    """Approve computed notices and queue their emails, atomically per run.

    `confirmed` must be True: callers reach this through credits.confirm (a token from
    the confirmation page or API preview), the command's question or its --yes.

    Failed notices get a fresh delivery budget; queued, sent and cancelled ones are left
    alone. Rows are written 5,000 at a time (one INSERT for the emails, one UPDATE for the
    notices, both over arrays; alike letters share one stored body). Approving again
    queues nothing twice: the notices are locked and each email's key is unique.
    """
    roles.check(actor, "credits.send")
    if isinstance(notices, QuerySet):
        # order_by(): the default ordering joins the customer to sort by name.
        ids = sorted(set(notices.order_by().values_list("pk", flat=True)))
    else:
        ids = sorted({n.pk for n in notices})
    if not confirmed:
        raise ValidationError("Sending credit notices needs a confirmation; nothing was sent.")
    summary = SendSummary()
    now = timezone.now()
    # One render per distinct letter for the whole run, not per chunk.
    renderer = emails.CreditNoticeRenderer()
    with transaction.atomic():
        done = 0
        for chunk in chunks(ids):
            _approve_chunk(lock_chunk(chunk), actor=actor, now=now, summary=summary, renderer=renderer)
            done += len(chunk)
            if progress and len(ids) > len(chunk):
                progress(done, len(ids))
    return summary


def _approve_chunk(
    chunk: Chunk,
    *,
    actor: AbstractBaseUser | None,
    now: datetime,
    summary: SendSummary,
    renderer: emails.CreditNoticeRenderer,
) -> None:
    to_queue = [n for n in chunk.rows if n.state in (NoticeState.COMPUTED, NoticeState.APPROVED)]
    # The claim deadline runs from the day the letter goes out, in the policy's zone.
    deadlines = {
        pk: claim_deadline_on(policy, now.astimezone(ZoneInfo(policy.time_zone)).date())
        for pk, policy in chunk.policies.items()
    }
    if to_queue:
        specs = _specs(chunk, to_queue, deadlines, renderer)
        _queue(to_queue, specs, deadlines=deadlines, actor=actor, now=now)
        summary.queued += len(to_queue)
    failed = _retry_failed(chunk)
    summary.retried += len(failed)
    summary.skipped += sum(
        1
        for n in chunk.rows
        if n.state not in (NoticeState.COMPUTED, NoticeState.APPROVED) and n.pk not in failed
    )


def _specs(
    chunk: Chunk, to_queue: list[NoticeRow], deadlines: dict[int, date], renderer: emails.CreditNoticeRenderer
) -> list[_Spec]:
    """One email per notice: a shared body with the name filled in, or (should the name
    ever be in the subject) a letter rendered for the notice alone."""
    keys, singles = letters(chunk, to_queue, deadlines, renderer)
    specs: list[_Spec] = []
    bodies: dict[tuple[str, str, str], outbox.SharedBody] = {}
    # Disputes go to the billing team (the letter says so only when this is set).
    reply_to = {"Reply-To": settings.CREDITS_REPLY_TO} if settings.CREDITS_REPLY_TO else None
    for n, letter_key in zip(to_queue, keys, strict=True):
        common: dict[str, Any] = {
            "key": notice_outbox_key(n.customer_id, n.policy_id, n.period),
            "to": list(n.billing_emails),
            "purpose": OUTBOX_PURPOSE,
            "ref": f"notice:{n.pk}",
            "headers": reply_to,
        }
        letter = renderer.letter(letter_key)
        if letter is None:
            subject, text, html = emails.render_credit_notice(singles[n.pk])
            specs.append(outbox.EmailSpec(subject=subject, text=text, html=html, **common))
            continue
        body = bodies.get(letter)
        if body is None:
            body = bodies[letter] = outbox.SharedBody(*letter)
        specs.append(outbox.SharedEmailSpec(body=body, fills=renderer.fills(n.name), **common))
    return specs


def _queue(
    to_queue: list[NoticeRow],
    specs: list[_Spec],
    *,
    deadlines: dict[int, date],
    actor: AbstractBaseUser | None,
    now: datetime,
) -> None:
    """Store the emails, then approve, link and date every notice in one UPDATE."""
    stored = outbox.messages_enqueue_many(specs)
    actor_id = actor.pk if actor is not None and getattr(actor, "is_authenticated", False) else None
    updates = []
    sent_before = []
    for n, spec in zip(to_queue, specs, strict=True):
        message_pk, message_id, state = stored[spec.key]
        updates.append(
            (n.pk, NoticeState.QUEUED, now, actor_id, message_pk, message_id, deadlines[n.policy_id], now)
        )
        if state == MessageState.SENT:
            sent_before.append(n.pk)
    bulk.bulk_update(
        CreditNotice,
        (
            "state",
            "approved_at",
            "approved_by_id",
            "message_id",
            "email_message_id",
            "claim_deadline",
            "updated_at",
        ),
        updates,
    )
    # Sent under this key before (the first notice for this customer, policy and month
    # was deleted by hand and computed again): record it, send nothing, and leave the
    # term alone: the first notice already moved it.
    for notice in CreditNotice.objects.filter(pk__in=sent_before).select_related("message"):
        assert notice.message is not None
        mark_sent(notice, notice.message, extend_term=False)


def _retry_failed(chunk: Chunk) -> set[int]:
    """Give the chunk's failed notices a fresh delivery budget; their ids."""
    failed = {n.pk for n in chunk.rows if n.state == NoticeState.FAILED and n.message_id is not None}
    for notice in CreditNotice.objects.filter(pk__in=failed).select_related("message").order_by("pk"):
        assert notice.message is not None
        outbox.message_retry(message=notice.message)
        notice.state = NoticeState.QUEUED
        notice.last_error = ""
        notice.save(update_fields=["state", "last_error", "updated_at"])
    return failed
