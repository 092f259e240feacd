"""The credit notice email, built from a subject/text/html template triplet.

A letter is written in its customer's language (`Customer.language`): the context is
built and the templates rendered under `translation.override`, so the words, dates,
durations and figures ("99,95 %", "2 déc. 2026") are all the customer's.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from email.utils import parseaddr
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext

from core.i18n import display_date, display_datetime, month_label, number, percent
from credits import selectors, sla, sla_measured
from credits.models import CreditNotice
from incidents.intervals import format_duration
from incidents.models import Incident, IncidentReport
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
    prevention: str = ""  # a summary of the remediation, when it lists no changes
    prevention_items: tuple[str, ...] = ()  # the changes it lists


# A sentence ends at . ! or ? followed by space and something that starts a sentence (not
# a lower-case word: "e.g. the" goes on).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-Þ0-9]|[^\s\w])")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"\*\*|__|`|(?<!\w)[*_]|[*_](?!\w)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")


def _plain(markdown: str) -> str:
    """One Markdown line or paragraph as plain text: links keep their words, emphasis,
    code marks, headings and quotes go, lines join."""
    lines = [re.sub(r"^\s*[#>]+\s*", "", line) for line in markdown.splitlines()]
    text = _EMPHASIS.sub("", _LINK.sub(r"\1", " ".join(lines)))
    return " ".join(text.split())


def _sentences(markdown: str, limit: int = 2, max_chars: int = 420) -> str:
    """A summary of a Markdown field for the letter: the first sentences of its first
    paragraph, whole (never cut inside one), up to `limit` sentences and about
    `max_chars` (a first sentence longer than that is still given whole). The letter
    links the full report for the rest."""
    paragraphs = [p for p in _PARAGRAPH.split(markdown or "") if p.strip()]
    if not paragraphs:
        return ""
    first = paragraphs[0]
    if all(_ITEM.match(line) for line in first.splitlines() if line.strip()):
        # A list: each item is read as a sentence.
        first = " ".join(
            _as_sentence(_plain(_ITEM.sub("", line))) for line in first.splitlines() if line.strip()
        )
    parts = _SENTENCE_END.split(_plain(first))
    out = parts[0]
    for part in parts[1:limit]:
        if len(out) + 1 + len(part) > max_chars:
            break
        out += " " + part
    return out


def _as_sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?", ":")) else text + "."


def _prevention(markdown: str, limit: int = 5) -> tuple[str, ...]:
    """The remediation's list items, whole (the changes that prevent a repeat), or ()
    when it has no list: then the letter summarises its text instead. The paragraphs
    before a list usually tell how the incident was fixed, not what prevents a repeat."""
    items = [
        _as_sentence(_plain(_ITEM.sub("", line)))
        for line in (markdown or "").splitlines()
        if _ITEM.match(line)
    ]
    return tuple(item for item in items if item != ".")[:limit]


def _local(value: datetime | None, tz: ZoneInfo) -> str:
    if value is None:
        return gettext("ongoing")
    return display_datetime(value, tz)


def _counted_from(notice: CreditNotice, policy_source: str) -> str:
    """Where the letter's downtime came from, said only under a policy that measures."""
    if policy_source == sla_measured.SOURCE_DECLARED:
        return ""
    if notice.measured_minutes is None:
        return gettext("the impact windows we declared (our monitoring had no data for this month)")
    measured = _number(notice.measured_minutes)
    if notice.downtime_source == sla_measured.SOURCE_MEASURED:
        return gettext("our monitoring's error rates (%(minutes)s minutes measured)") % {"minutes": measured}
    return gettext(
        "the impact windows we declared, longer than the %(minutes)s minutes our monitoring measured"
    ) % {"minutes": measured}


def versions_key(versions: list[dict[str, str]]) -> tuple[Any, ...]:
    """The policy versions a notice records, as a hashable part of its letter key."""
    return tuple(tuple(sorted(v.items())) for v in versions or ())


@dataclass(frozen=True)
class VersionLine:
    days: str
    target: str
    uptime: str
    credit: str


def version_lines(notice: CreditNotice, tz: ZoneInfo) -> list[VersionLine]:
    """What each policy version owed for its days, when the month spans a change."""
    if len(notice.versions or ()) < 2:
        return []
    lines = []
    for part in notice.versions:
        first = datetime.fromisoformat(part["start"]).astimezone(tz).date()
        last = (datetime.fromisoformat(part["end"]) - timedelta(microseconds=1)).astimezone(tz).date()
        credit = Decimal(part["credit"]).normalize()
        lines.append(
            VersionLine(
                days=gettext("%(first)s to %(last)s")
                % {"first": display_date(first), "last": display_date(last)},
                target=percent(Decimal(part["target"]).normalize()),
                uptime=percent(
                    Decimal(part["uptime_percent"]).quantize(Decimal("0.01"), rounding=ROUND_DOWN)
                ),
                credit=percent(credit)
                if notice.unit == CreditNotice.Unit.PERCENT
                else gettext("%(days)s days") % {"days": number(credit)},
            )
        )
    return lines


def _target(notice: CreditNotice) -> Decimal:
    """The target promised at the month's end: its last version's, else the policy's."""
    if notice.versions:
        return Decimal(notice.versions[-1]["target"])
    return notice.policy.target


def _number(value: Decimal) -> str:
    return number(value.normalize())


def _incident_line(
    incident: Incident, spans: dict[int, tuple[timedelta, datetime, datetime]], tz: ZoneInfo
) -> IncidentLine:
    if not incident.is_public:
        # Hidden after the notice was computed (drafts never count): the title stays internal.
        return IncidentLine(gettext("An unlisted incident"), "", _local(incident.started_at, tz), "", "")
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
    open_for = format_duration(end - incident.started_at) if end else ""
    items = _prevention(report.remediation) if report else ()
    return IncidentLine(
        title=incident.title,
        url=url,
        started=_local(incident.started_at, tz),
        ended=_local(end, tz),
        duration=format_duration(total) if end else "",
        open_for=open_for if open_for != format_duration(total) else "",
        yours=yours,
        yours_from=yours_from,
        yours_to=yours_to,
        report_url=url if report else "",
        summary=_sentences(report.summary) if report else "",
        root_cause=_sentences(report.root_cause) if report else "",
        prevention=_sentences(report.remediation) if report and not items else "",
        prevention_items=items,
    )


def _term(notice: CreditNotice) -> tuple[int, date | None, date | None]:
    """The days credited, and the term's end before and after them (the customer's term
    already moved once the notice was sent)."""
    days = int(notice.credit) if notice.unit == CreditNotice.Unit.DAYS else 0
    term_before: date | None = notice.customer.term_end_date
    if notice.term_extended_at is not None and term_before is not None:
        term_before = term_before - timedelta(days=days)
    term_after = term_before + timedelta(days=days) if term_before is not None else None
    return days, term_before, term_after


def notice_context(notice: CreditNotice) -> dict[str, Any]:
    policy, customer = notice.policy, notice.customer
    tz = ZoneInfo(policy.time_zone)
    period = sla.Period.parse(notice.period)
    spans = selectors.notice_breakdown(notice).incident_spans()
    # .all() so a caller's prefetch (ordered by start) is used; sorted again to be sure.
    incidents = [
        _incident_line(incident, spans, tz)
        for incident in sorted(notice.incidents.all(), key=lambda i: (i.started_at, i.pk))
    ]
    days, term_before, term_after = _term(notice)
    uptime = notice.uptime_percent.quantize(Decimal("0.01"), rounding=ROUND_DOWN)
    return {
        "language": translation.get_language(),
        "site_name": settings.SITE_NAME,
        "site_url": settings.SITE_URL,
        # The customer portal, in the letter's language (its own uptime, incidents, statements).
        "portal_url": settings.SITE_URL + reverse("portal:home"),
        # Where a reply goes (the letter's Reply-To, its address alone in the words);
        # empty: the letter says how else to write.
        "reply_to": parseaddr(settings.CREDITS_REPLY_TO)[1] if settings.CREDITS_REPLY_TO else "",
        "notice": notice,
        "customer": customer,
        "policy": policy,
        "period_label": month_label(date(period.year, period.month, 1)),
        "time_zone": policy.time_zone,
        "uptime": uptime,
        "uptime_percent": percent(uptime),
        "target": _number(_target(notice)),
        "target_percent": percent(_target(notice).normalize()),
        "version_lines": version_lines(notice, tz),
        "downtime": format_duration(timedelta(minutes=float(notice.downtime_minutes))),
        "downtime_minutes": _number(notice.downtime_minutes),
        "downtime_counted_from": _counted_from(notice, policy.downtime_source),
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
        return subject, _text(context), render_to_string(HTML, context)


def _text(context: dict[str, Any]) -> str:
    return plain_text(wrap_text(render_to_string(TEXT, context)))


# A long line's hanging indent: its own indentation, plus the "- " of an item or the
# padded label of a "Label:   value" line.
_HANG = re.compile(r"^( *)(- |\S[^:]*: {2,})?")


def wrap_text(text: str, width: int = 72) -> str:
    """The text letter with every long line wrapped at `width` on spaces only, so a URL
    (or any long word) stays whole, on a line of its own if it must. The first line, the
    greeting, is left as it is: it holds the customer's name, which a shared render puts
    in after wrapping, so wrapping it would make two alike letters differ."""
    head, _, body = text.partition("\n")
    lines = [head]
    for line in body.split("\n"):
        match = _HANG.match(line)
        assert match is not None  # the pattern matches the empty string
        lead = match.group(0)
        if len(line) <= width or not line[len(lead) :].strip():
            lines.append(line)
            continue
        lines += textwrap.wrap(
            line[len(lead) :],
            width,
            initial_indent=lead,
            subsequent_indent=" " * len(lead),
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(lines)


def plain_text(rendered: str) -> str:
    """A text template's output as a plain str. The template turns autoescape off, so
    Django marks its output safe; shown on an HTML page it must be escaped like any other
    text (a customer named `<script>` would otherwise run in the console)."""
    return str.__str__(rendered)


# Stands in for the customer's name in a shared render (letters, digits, hyphens: HTML
# escaping leaves it alone).
_NAME_MARK = "customer-name-5d2b8e41"


# What a letter reads of each thing, as field names: the model paths below and the
# approval's set-based load (credits.services) take the same values, so both build the
# same letter key.
POLICY_FIELDS = ("pk", "name", "time_zone", "target", "claim_window_days", "downtime_source")
INCIDENT_FIELDS = (
    "pk",
    "title",
    "is_public",
    "public_id",
    "started_at",
    "resolved_at",
    "updated_at",
    "status",
)


def letter_key(
    *,
    policy: tuple[Any, ...],
    language: str,
    term_end_date: date | None,
    currency: str,
    customer_policy_id: int | None,
    period: str,
    unit: str,
    credit: Decimal,
    credit_amount: Decimal | None,
    downtime_minutes: Decimal,
    uptime_percent: Decimal,
    measured: tuple[str, Decimal | None, tuple[Any, ...]],
    claim_deadline: date | None,
    term_extended: bool,
    computed_at: datetime,
    incidents: tuple[tuple[Any, ...], ...],
    entitlements: Iterable[tuple[int, int | None, int | None]],
) -> tuple[Any, ...]:
    """Everything a credit letter says but the customer's name (and the site's own name
    and address, fixed for a renderer's life), as one hashable value: two notices with
    equal keys get the same letter, word for word.

    `policy` holds the POLICY_FIELDS of the notice's policy; `incidents` the
    INCIDENT_FIELDS of each incident it names, by start (updated_at and status move when
    a report is written or published, which the letter quotes); `entitlements` the
    customer's (product, location, policy) rows, of which only those under the notice's
    policy decide the customer's own share of each incident.
    """
    policy_id = policy[0]
    entitled = tuple(
        sorted(
            (product_id, location_id or 0)
            for product_id, location_id, own_policy in entitlements
            if (own_policy or customer_policy_id) == policy_id
        )
    )
    # The breakdown measures an incident still open up to the computation.
    ongoing = any(incident[5] is None for incident in incidents)
    return (
        language,  # two customers alike in all else get different letters
        policy,
        term_end_date,
        currency,
        period,
        unit,
        credit,
        credit_amount,
        downtime_minutes,
        uptime_percent,
        measured,
        claim_deadline,
        term_extended,
        computed_at if ongoing else None,
        incidents,
        entitled,
    )


def notice_letter_key(notice: CreditNotice) -> tuple[Any, ...]:
    """`letter_key` of a loaded notice (its customer, policy, incidents and the customer's
    entitlements are read through the instance: prefetch them for many)."""
    policy, customer = notice.policy, notice.customer
    return letter_key(
        policy=tuple(getattr(policy, f) for f in POLICY_FIELDS),
        language=customer.language,
        term_end_date=customer.term_end_date,
        currency=customer.currency,
        customer_policy_id=customer.policy_id,
        period=notice.period,
        unit=notice.unit,
        credit=notice.credit,
        credit_amount=notice.credit_amount,
        downtime_minutes=notice.downtime_minutes,
        uptime_percent=notice.uptime_percent,
        measured=(notice.downtime_source, notice.measured_minutes, versions_key(notice.versions)),
        claim_deadline=notice.claim_deadline,
        term_extended=notice.term_extended_at is not None,
        computed_at=notice.computed_at,
        incidents=tuple(
            tuple(getattr(i, f) for f in INCIDENT_FIELDS)
            for i in sorted(notice.incidents.all(), key=lambda i: (i.started_at, i.pk))
        ),
        entitlements=[(e.product_id, e.location_id, e.policy_id) for e in customer.entitlements.all()],
    )


# A letter with a stand-in for the customer's name, or None when the name would be in the
# subject (such a letter is rendered per notice).
SharedLetter = tuple[str, str, str] | None


class CreditNoticeRenderer:
    """`render_credit_notice` for many notices, rendering each distinct email once.

    The templates read nothing of a notice but the values of `notice_context`, and the only
    per-customer one among them is the name. Notices with the same `letter_key` (the
    common case when one outage hits many customers on one plan) share one render; the
    name is put in afterwards, escaped for HTML as the template would. Tests hold it equal
    to a render per notice.

    A caller that computes keys from plain values (credits.services, approving thousands
    of notices) asks `knows(key)` and hands over one loaded notice per new key to
    `learn`, which checks that the notice's own key is the one given.
    """

    def __init__(self) -> None:
        self._memo: dict[tuple[Any, ...], SharedLetter] = {}

    def knows(self, key: tuple[Any, ...]) -> bool:
        return key in self._memo

    def learn(self, key: tuple[Any, ...], notice: CreditNotice) -> SharedLetter:
        """Render `notice` with a stand-in for the name and remember it under `key`."""
        own = notice_letter_key(notice)
        if own != key:
            # The set-based key and the instance's disagree: sharing a letter would send
            # some customer another's figures. Never guess.
            raise RuntimeError(
                f"credit notice {notice.pk}: its letter key differs from the one computed for it"
            )
        with translation.override(notice.customer.language):
            context = notice_context(notice)
            stand_in = {**context, "customer": {"name": _NAME_MARK}}
            subject = " ".join(render_to_string(SUBJECT, stand_in).split())
            letter: SharedLetter = (
                None
                if _NAME_MARK in subject
                else (subject, _text(stand_in), render_to_string(HTML, stand_in))
            )
        self._memo[key] = letter
        return letter

    def letter(self, key: tuple[Any, ...]) -> SharedLetter:
        """The letter learnt under `key` (the same tuple for every alike notice, so an
        outbox shared body is stored once); None when it is rendered per notice."""
        return self._memo[key]

    @staticmethod
    def fills(name: str) -> dict[str, str]:
        return {_NAME_MARK: name}

    def shared(self, notice: CreditNotice) -> tuple[tuple[str, str, str], dict[str, str]] | None:
        """The letter with a stand-in for the name, and {stand-in: name}; None when the
        name would be in the subject (rendered per notice then)."""
        key = notice_letter_key(notice)
        letter = self._memo[key] if key in self._memo else self.learn(key, notice)
        if letter is None:
            return None
        return letter, self.fills(notice.customer.name)

    def render(self, notice: CreditNotice) -> tuple[str, str, str]:
        parts = self.shared(notice)
        if parts is None:
            # Not used by today's subject; rendered per notice should it ever be.
            return render_credit_notice(notice)
        (subject, text, html), _ = parts
        name = notice.customer.name
        return subject, text.replace(_NAME_MARK, name), html.replace(_NAME_MARK, str(escape(name)))


def preview_credit_notice(notice: CreditNotice, *, today: date | None = None) -> tuple[str, str, str]:
    """The letter exactly as approving it today would send it: same builder, with the
    claim deadline the approval will set (a notice already queued, sent or failed keeps
    the one its letter was written with)."""
    deadline = selectors.letter_claim_deadline(notice, today=today)
    if deadline is not None:
        notice.claim_deadline = deadline
    return render_credit_notice(notice)
