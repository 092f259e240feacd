"""CSV for finance: a period's notices, and one customer's monthly SLA statement.

Amounts are written as plain decimal strings (no thousands separators, no currency
symbols) so a spreadsheet or a script reads them back exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from zoneinfo import ZoneInfo

from core import csvfile
from credits import emails, sla
from credits.models import CreditNotice, Customer
from credits.selectors import letter_claim_deadline, notice_entitlements_for_customer

NOTICE_COLUMNS = [
    "notice_id",
    "period",
    "customer_id",
    "customer",
    "policy",
    "downtime_minutes",
    "uptime_percent",
    "credit",
    "unit",
    "credit_amount",
    "currency",
    "state",
    "claim_deadline",
    "approved_at",
    "sent_at",
]


def notices_csv(notices: Iterable[CreditNotice]) -> str:
    """One row per notice. `claim_deadline` is the one the letter carries (or would carry
    if sent today: see `letter_claim_deadline`), empty for a cancelled notice."""
    rows = (
        [
            n.pk,
            n.period,
            n.customer_id,
            n.customer.name,
            n.policy.name,
            n.downtime_minutes,
            n.uptime_percent,
            n.credit,
            n.unit,
            "" if n.credit_amount is None else n.credit_amount,
            n.customer.currency,
            n.state,
            _iso(letter_claim_deadline(n)),
            n.approved_at.isoformat() if n.approved_at else "",
            n.sent_at.isoformat() if n.sent_at else "",
        ]
        for n in notices
    )
    return csvfile.csv_text(NOTICE_COLUMNS, rows)


def _iso(day: date | None) -> str:
    return day.isoformat() if day else ""


@dataclass(frozen=True)
class StatementLine:
    product: str
    location: str
    policy: str
    downtime_minutes: Decimal
    uptime_percent: Decimal


@dataclass(frozen=True)
class Statement:
    customer: Customer
    period: str
    lines: list[StatementLine]
    notices: list[CreditNotice]

    @property
    def notice_versions(self) -> list[tuple[CreditNotice, list[emails.VersionLine]]]:
        """Each notice with the policy versions that applied, when its month spans a change."""
        return [(n, emails.version_lines(n, ZoneInfo(n.policy.time_zone))) for n in self.notices]


def statement(customer: Customer, period: sla.Period) -> Statement:
    lines = [
        StatementLine(
            product=e.product.name,
            location=e.location.name if e.location else "everywhere",
            policy=policy.name,
            downtime_minutes=result.downtime_minutes_rounded,
            uptime_percent=result.uptime_percent_rounded,
        )
        for e, policy, result in notice_entitlements_for_customer(customer, period)
    ]
    notices = list(
        CreditNotice.objects.filter(customer=customer, period=str(period)).select_related(
            "policy", "customer"
        )
    )
    return Statement(customer=customer, period=str(period), lines=lines, notices=notices)


STATEMENT_COLUMNS = [
    "section",
    "product",
    "location",
    "policy",
    "downtime_minutes",
    "uptime_percent",
    "credit",
    "unit",
    "credit_amount",
    "currency",
    "state",
]


def statement_csv(st: Statement) -> str:
    rows: list[list[object]] = [
        [
            "uptime",
            line.product,
            line.location,
            line.policy,
            line.downtime_minutes,
            line.uptime_percent,
            "",
            "",
            "",
            "",
            "",
        ]
        for line in st.lines
    ]
    rows += [
        [
            "credit",
            "",
            "",
            n.policy.name,
            n.downtime_minutes,
            n.uptime_percent,
            n.credit,
            n.unit,
            "" if n.credit_amount is None else n.credit_amount,
            st.customer.currency,
            n.state,
        ]
        for n in st.notices
    ]
    return csvfile.csv_text(STATEMENT_COLUMNS, rows)
