"""The credit notice email, built from a subject/text/html template triplet.

A letter is written in its customer's language (`Customer.language`): the context is
built and the templates rendered under `translation.override`, so the words, dates,
durations and figures ("99,95 %", "2 déc. 2026") are all the customer's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext

from core.i18n import display_date, display_datetime, month_label, number, percent
from credits import selectors, sla
from credits.models import CreditNotice
from incidents.intervals import format_duration
from incidents.models import IncidentReport
from incidents.selectors import incident_durations

SUBJECT = "emails/credit_notice_subject.txt"
TEXT = "emails/credit_notice.txt"
HTML = "emails/credit_notice.html"


@dataclass(frozen=True)
class IncidentLine:
    title: str
    url: str
    started: str
    ended: str
    duration: str  # the incident's total, as its public page gives it
    open_for: str = ""  # first start to resolution, when impact came in separate stretches
    yours: str = ""  # the customer's own affected time, when it differs from the total
    yours_from: str = ""
    yours_to: str = ""
    report_url: str = ""
    summary: str = ""
    root_cause: str = ""
    prevention: str = ""


def _sentences(markdown: str, limit: int = 2, max_chars: int = 420) -> str:
    """The first few sentences of a Markdown field, as plain text for the letter."""
    text = re.sub(r"[`*_>#\[\]]|\(https?://[^)]*\)", "", markdown or "")
    text = " ".join(text.split())
    parts = re.split(r"(?<=[.!?])\s+", text)
    out = " ".join(parts[:limit])
    return out if len(out) <= max_chars else out[: max_chars - 1].rsplit(" ", 1)[0] + "…"


def _local(value: datetime | None, tz: ZoneInfo) -> str:
    if value is None:
        return gettext("ongoing")
    return display_datetime(value, tz)


def _number(value: Decimal) -> str:
    return number(value.normalize())


def notice_context(notice: CreditNotice) -> dict[str, Any]:
    policy, customer = notice.policy, notice.customer
    tz = ZoneInfo(policy.time_zone)
    period = sla.Period.parse(notice.period)
    incidents = []
    spans = selectors.notice_breakdown(notice).incident_spans()
    # .all() so a caller's prefetch (ordered by start) is used; sorted again to be sure.
    for incident in sorted(notice.incidents.all(), key=lambda i: (i.started_at, i.pk)):
        if not incident.is_public:
            # Internal incidents still count as downtime; their titles stay internal.
            incidents.append(
                IncidentLine(gettext("An unlisted incident"), "", _local(incident.started_at, tz), "", "")
            )
            continue
        end = incident.resolved_at
        total = incident_durations(incident=incident).total
        url = f"{settings.SITE_URL}/incidents/{incident.public_id}/"
        yours, yours_from, yours_to = "", "", ""
        span = spans.get(incident.pk)
        if span is not None and format_duration(span[0]) != format_duration(total):
            yours = format_duration(span[0])
            yours_from, yours_to = _local(span[1], tz), _local(span[2], tz)
        report = IncidentReport.objects.filter(
            incident=incident, status=IncidentReport.Status.PUBLISHED, published_at__isnull=False
        ).first()
        incidents.append(
            IncidentLine(
                title=incident.title,
                url=url,
                started=_local(incident.started_at, tz),
                ended=_local(end, tz),
                duration=format_duration(total) if end else "",
                open_for=format_duration(end - incident.started_at)
                if end and format_duration(end - incident.started_at) != format_duration(total)
                else "",
                yours=yours,
                yours_from=yours_from,
                yours_to=yours_to,
                report_url=url if report else "",
                summary=_sentences(report.summary) if report else "",
                root_cause=_sentences(report.root_cause) if report else "",
                prevention=_sentences(report.remediation) if report else "",
            )
        )
    days = int(notice.credit) if notice.unit == CreditNotice.Unit.DAYS else 0
    term_before: date | None = customer.term_end_date
    if notice.term_extended_at is not None and term_before is not None:
        term_before = term_before - timedelta(days=days)
    term_after = term_before + timedelta(days=days) if term_before is not None else None
    uptime = notice.uptime_percent.quantize(Decimal("0.01"), rounding=ROUND_DOWN)
    return {
        "language": translation.get_language(),
        "site_name": settings.SITE_NAME,
        "site_url": settings.SITE_URL,
        "notice": notice,
        "customer": customer,
        "policy": policy,
        "period_label": month_label(date(period.year, period.month, 1)),
        "time_zone": policy.time_zone,
        "uptime": uptime,
        "uptime_percent": percent(uptime),
        "target": _number(policy.target),
        "target_percent": percent(policy.target.normalize()),
        "downtime": format_duration(timedelta(minutes=float(notice.downtime_minutes))),
        "downtime_minutes": _number(notice.downtime_minutes),
        "incidents": incidents,
        "is_days": notice.unit == CreditNotice.Unit.DAYS,
        "days": days,
        "percent": _number(notice.credit),
        "credit_percent": percent(notice.credit.normalize()),
        "amount": notice.credit_amount,
        "currency": customer.currency,
        "term_before": term_before,
        "term_after": term_after,
        "term_before_label": display_date(term_before),
        "term_after_label": display_date(term_after),
        "claim_deadline": notice.claim_deadline,
        "claim_deadline_label": display_date(notice.claim_deadline),
        "claim_window_days": policy.claim_window_days,
        "any_partial": any(i.yours for i in incidents) or len(incidents) > 1,
    }


def render_credit_notice(notice: CreditNotice) -> tuple[str, str, str]:
    with translation.override(notice.customer.language):
        context = notice_context(notice)
        subject = " ".join(render_to_string(SUBJECT, context).split())
        return subject, render_to_string(TEXT, context), render_to_string(HTML, context)


# Stands in for the customer's name in a shared render (letters, digits, hyphens: HTML
# escaping leaves it alone).
_NAME_MARK = "customer-name-5d2b8e41"


class CreditNoticeRenderer:
    """`render_credit_notice` for many notices, rendering each distinct email once.

    The templates read nothing of a notice but the values of `notice_context`, and the only
    per-customer one among them is the name. Notices alike in everything else (same policy,
    period, incidents, figures and dates: the common case when one outage hits many
    customers on one plan) share one render; the name is put in afterwards, escaped for
    HTML as the template would. Tests hold it equal to a render per notice.
    """

    def __init__(self) -> None:
        self._memo: dict[tuple[Any, ...], tuple[str, str, str]] = {}

    @staticmethod
    def _shape(notice: CreditNotice) -> tuple[Any, ...]:
        # Everything notice_context reads, but the customer's name (put in afterwards), so
        # that alike notices skip building the context too.
        policy, customer = notice.policy, notice.customer
        # updated_at and status move when the report is written or published, which the
        # letter quotes; the entitlements decide the customer's own share of each incident.
        incidents = tuple(
            (i.pk, i.title, i.is_public, i.public_id, i.started_at, i.resolved_at, i.updated_at, i.status)
            for i in notice.incidents.all()
        )
        entitlements = tuple(
            sorted((e.product_id, e.location_id or 0, e.policy_id or 0) for e in customer.entitlements.all())
        )
        return (
            # The letter's language: two customers alike in all else get different letters.
            customer.language,
            settings.SITE_NAME,
            settings.SITE_URL,
            policy.pk,
            policy.name,
            policy.time_zone,
            policy.target,
            customer.term_end_date,
            customer.currency,
            notice.period,
            notice.unit,
            notice.credit,
            notice.credit_amount,
            notice.downtime_minutes,
            notice.uptime_percent,
            notice.claim_deadline,
            notice.term_extended_at is not None,
            incidents,
            entitlements,
        )

    def shared(self, notice: CreditNotice) -> tuple[tuple[str, str, str], dict[str, str]] | None:
        """The letter with a stand-in for the name, and {stand-in: name}; the same tuple
        for every alike notice (so an outbox shared body is stored once). None when the
        name would be in the subject (rendered per notice then)."""
        shape = self._shape(notice)
        shared = self._memo.get(shape)
        if shared is None:
            with translation.override(notice.customer.language):
                context = notice_context(notice)
                stand_in = {**context, "customer": {"name": _NAME_MARK}}
                shared = (
                    " ".join(render_to_string(SUBJECT, stand_in).split()),
                    render_to_string(TEXT, stand_in),
                    render_to_string(HTML, stand_in),
                )
            self._memo[shape] = shared
        if _NAME_MARK in shared[0]:
            return None
        return shared, {_NAME_MARK: notice.customer.name}

    def render(self, notice: CreditNotice) -> tuple[str, str, str]:
        parts = self.shared(notice)
        if parts is None:
            # Not used by today's subject; rendered per notice should it ever be.
            return render_credit_notice(notice)
        (subject, text, html), _ = parts
        name = notice.customer.name
        return subject, text.replace(_NAME_MARK, name), html.replace(_NAME_MARK, str(escape(name)))


def preview_credit_notice(notice: CreditNotice, *, today: date) -> tuple[str, str, str]:
    """The letter exactly as approving it today would send it: same builder, with the
    claim deadline the approval will set (a notice already queued keeps its own)."""
    if notice.state in (CreditNotice.State.COMPUTED, CreditNotice.State.APPROVED, CreditNotice.State.FAILED):
        notice.claim_deadline = sla.claim_deadline(today, notice.policy.claim_window_days)
    return render_credit_notice(notice)
