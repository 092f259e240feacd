"""Demo SLA data: the two reference policies of DESIGN.md section 4 and a set of customers.

With the incidents demo loaded, `sla_credits compute --period 2009-09` (the Gmail outage)
and `--period 2026-10` (the Cloud Storage incident in us-central1) give a reviewable list.
Idempotent: policies and customers are keyed on their names; what exists is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal as D
from typing import Any, Protocol

from django.db import transaction

from credits import services
from credits.models import Customer, SLAPolicy
from incidents.models import Location, Product

WORKSPACE = "Google Workspace SLA (99.9% monthly, days of service)"
CLOUD_STORAGE = "Cloud Storage regional SLA (99.9% monthly, percent of bill)"


class Writer(Protocol):
    def write(self, msg: str, /) -> Any: ...


@dataclass
class CreditsDemoSummary:
    policies_created: int = 0
    customers_created: int = 0


# (name, billing emails, policy, eligible, term end, monthly bill, [(product slug, location or None, policy)])
CUSTOMERS: tuple[
    tuple[str, list[str], str, bool, date | None, D | None, list[tuple[str, str | None, str | None]]], ...
] = (
    (
        "Northwind Traders",
        ["billing@northwind.example"],
        WORKSPACE,
        True,
        date(2010, 6, 30),
        None,
        [("gmail", None, None)],
    ),
    (
        "Contoso Pharmaceuticals",
        ["it-billing@contoso.example", "cfo-office@contoso.example"],
        WORKSPACE,
        True,
        date(2009, 12, 31),
        None,
        [("gmail", None, None)],
    ),
    (
        "Fabrikam Legal (trial, no SLA)",
        ["admin@fabrikam.example"],
        WORKSPACE,
        False,
        None,
        None,
        [("gmail", None, None)],
    ),
    (
        "Tailspin Toys",
        ["accounts@tailspin.example"],
        CLOUD_STORAGE,
        True,
        None,
        D("12000.00"),
        [("cloud-storage", "us-central1", None)],
    ),
    (
        "Wide World Importers",
        ["ap@wideworld.example"],
        CLOUD_STORAGE,
        True,
        None,
        D("4800.00"),
        [("cloud-storage", "us-central1-b", None)],
    ),
    (
        "Adventure Works",
        ["finance@adventure-works.example"],
        CLOUD_STORAGE,
        True,
        None,
        D("2500.00"),
        [("cloud-storage", "us-central1-a", None)],
    ),
    (
        "Litware Analytics (europe-west1)",
        ["billing@litware.example"],
        CLOUD_STORAGE,
        True,
        None,
        D("9000.00"),
        [("cloud-storage", "europe-west1", None)],
    ),
    (
        "Blue Yonder Airlines",
        ["it@blueyonder.example"],
        WORKSPACE,
        True,
        date(2027, 3, 31),
        D("30000.00"),
        [("gmail", None, None), ("cloud-storage", "us-central1-b", CLOUD_STORAGE)],
    ),
)


def _policies() -> tuple[dict[str, SLAPolicy], int]:
    created = 0
    found = {p.name: p for p in SLAPolicy.objects.filter(name__in=[WORKSPACE, CLOUD_STORAGE])}
    if WORKSPACE not in found:
        found[WORKSPACE] = services.policy_create(
            name=WORKSPACE,
            description=(
                "Google Workspace (formerly Google Apps) style: 99.9% monthly uptime. Below 99.9% "
                "adds 3 days of service to the term, below 99.0% 7 days, below 95.0% 15 days. "
                "Outages shorter than 10 consecutive minutes do not count."
            ),
            target=D("99.9"),
            tiers=[(D("99.9"), D(3)), (D("99.0"), D(7)), (D("95.0"), D(15))],
            unit=SLAPolicy.Unit.DAYS,
            time_zone="US/Pacific",
            min_downtime_minutes=10,
            exclude_maintenance=True,
            claim_window_days=30,
        )
        created += 1
    if CLOUD_STORAGE not in found:
        found[CLOUD_STORAGE] = services.policy_create(
            name=CLOUD_STORAGE,
            description=(
                "Cloud Storage regional style: 99.9% monthly uptime. Below 99.9% credits 10% of "
                "the monthly bill, below 99.0% 25%, below 95.0% 50%. Elevated error rates "
                "(partial outage) count as downtime; outages under 5 minutes do not."
            ),
            target=D("99.9"),
            tiers=[(D("99.9"), D(10)), (D("99.0"), D(25)), (D("95.0"), D(50))],
            unit=SLAPolicy.Unit.PERCENT,
            cap=D(50),
            time_zone="US/Pacific",
            min_downtime_minutes=5,
            exclude_maintenance=True,
            claim_window_days=30,
        )
        created += 1
    return found, created


def load(*, stdout: Writer | None = None) -> CreditsDemoSummary:
    summary = CreditsDemoSummary()
    products = {p.slug: p for p in Product.objects.filter(slug__in=["gmail", "cloud-storage"])}
    locations = {loc.name: loc for loc in Location.objects.all()}
    with transaction.atomic():
        policies, summary.policies_created = _policies()
        existing = set(Customer.objects.values_list("name", flat=True))
        for name, emails, policy_name, eligible, term_end, bill, entitlements in CUSTOMERS:
            if name in existing:
                continue
            customer = services.customer_create(
                name=name,
                billing_emails=emails,
                policy=policies[policy_name],
                sla_eligible=eligible,
                term_end_date=term_end,
                monthly_bill=bill,
            )
            for slug, location_name, override in entitlements:
                if slug not in products or (location_name and location_name not in locations):
                    continue  # the incidents demo has not created that catalogue entry
                services.customer_entitle(
                    customer=customer,
                    product=products[slug],
                    location=locations[location_name] if location_name else None,
                    policy=policies[override] if override else None,
                )
            summary.customers_created += 1
    if stdout is not None:
        stdout.write(
            f"SLA credits: {summary.policies_created} policies, {summary.customers_created} customers created\n"
        )
    return summary
