"""Deterministic builders for the credits tests."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D
from typing import Any

from credits import services
from credits.models import Customer, SLAPolicy
from incidents.models import Location, Product


def workspace_policy(**kw: Any) -> SLAPolicy:
    params: dict[str, Any] = {
        "name": "Workspace",
        "target": D("99.9"),
        "tiers": [(D("99.9"), D(3)), (D("99.0"), D(7)), (D("95.0"), D(15))],
        "unit": SLAPolicy.Unit.DAYS,
        "time_zone": "US/Pacific",
        "min_downtime_minutes": 10,
    }
    params.update(kw)
    return services.policy_create(**params)


def storage_policy(**kw: Any) -> SLAPolicy:
    params: dict[str, Any] = {
        "name": "Cloud Storage regional",
        "target": D("99.9"),
        "tiers": [(D("99.9"), D(10)), (D("99.0"), D(25)), (D("95.0"), D(50))],
        "unit": SLAPolicy.Unit.PERCENT,
        "cap": D(50),
        "time_zone": "US/Pacific",
        "min_downtime_minutes": 5,
    }
    params.update(kw)
    return services.policy_create(**params)


def customer(
    name: str,
    *,
    policy: SLAPolicy,
    products: list[tuple[Product, Location | None]],
    emails: list[str] | None = None,
    term_end_date: date | None = date(2010, 1, 31),
    monthly_bill: D | None = None,
    sla_eligible: bool = True,
) -> Customer:
    slug = name.lower().replace(" ", "-")
    created = services.customer_create(
        name=name,
        billing_emails=emails or [f"billing@{slug}.example"],
        policy=policy,
        term_end_date=term_end_date,
        monthly_bill=monthly_bill,
        sla_eligible=sla_eligible,
    )
    for product, location in products:
        services.customer_entitle(customer=created, product=product, location=location)
    return created
