"""CSV for finance: a period's notices, and one customer's monthly SLA statement.

Amounts are written as plain decimal strings (no thousands separators, no currency
symbols) so a spreadsheet or a script reads them back exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from core import csvfile
from credits import sla
from credits.models import CreditNotice, Customer
from credits.selectors import notice_entitlements_for_customer

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
            n.claim_deadline.isoformat(),
            n.approved_at.isoformat() if n.approved_at else "",
            n.sent_at.isoformat() if n.sent_at else "",
        ]
        for n in notices
    )
    return csvfile.csv_text(NOTICE_COLUMNS, rows)


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
