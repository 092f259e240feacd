"""Writes of SLA policies and their credit tiers."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from core import roles
from core.errors import InUse
from core.text import clean_single_line
from credits.models import CreditNotice, CreditTier, Customer, CustomerEntitlement, SLAPolicy
from credits.services.versions import sync_newest

# The weight of each impact level, as the policy's fields name them.
POLICY_WEIGHT_FIELDS = (
    "weight_major_outage",
    "weight_partial_outage",
    "weight_degraded_performance",
    "weight_under_maintenance",
)

# A policy's editable fields, in the order the API shows them: one list for the admin
# form, the API serializer and `policy_update`. The admin groups them as terms, then what
# counts as downtime.
POLICY_TERMS = ("name", "description", "target", "time_zone", "unit", "cap", "claim_window_days")
POLICY_DOWNTIME_RULES = ("min_downtime_minutes", "exclude_maintenance")
POLICY_FIELDS = (*POLICY_TERMS, *POLICY_DOWNTIME_RULES, *POLICY_WEIGHT_FIELDS)


def clean_time_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError({"time_zone": f"{value!r} is not a time zone."}) from None
    return value


def policy_weights(fields: dict[str, Any]) -> dict[str, Decimal]:
    """Take the weight fields out of `fields` (in place), as `policy_create`'s weights."""
    return {name.removeprefix("weight_"): fields.pop(name) for name in POLICY_WEIGHT_FIELDS if name in fields}


@transaction.atomic
def policy_create(
    *,
    name: str,
    target: Decimal,
    tiers: Iterable[tuple[Decimal, Decimal]],
    unit: str = SLAPolicy.Unit.DAYS,
    time_zone: str = "US/Pacific",
    cap: Decimal | None = None,
    min_downtime_minutes: int = 0,
    exclude_maintenance: bool = True,
    claim_window_days: int = 30,
    description: str = "",
    weights: dict[str, Decimal] | None = None,
    downtime_source: str = "declared",
    measured_down_above: Decimal = Decimal(5),
    actor: AbstractBaseUser | None = None,
) -> SLAPolicy:
    """A policy and its tiers ((below, credit) pairs)."""
    roles.check(actor, "policy.write")
    policy = SLAPolicy(
        name=clean_single_line(name, field="name", max_length=100),
        description=description,
        target=Decimal(target),
        time_zone=clean_time_zone(time_zone),
        unit=unit,
        cap=cap,
        min_downtime_minutes=min_downtime_minutes,
        exclude_maintenance=exclude_maintenance,
        claim_window_days=claim_window_days,
        downtime_source=downtime_source,
        measured_down_above=Decimal(measured_down_above),
    )
    for level, weight in (weights or {}).items():
        setattr(policy, f"weight_{level}", Decimal(weight))
    policy.full_clean()
    policy.save()
    for below, credit in tiers:
        tier = CreditTier(policy=policy, below=Decimal(below), credit=Decimal(credit))
        tier.full_clean(exclude=["policy"])
        tier.save()
    sync_newest(policy, actor=actor)
    return policy


@transaction.atomic
def policy_update(
    *, policy: SLAPolicy, changes: dict[str, Any], actor: AbstractBaseUser | None = None
) -> SLAPolicy:
    """Edit a policy's terms in place: they amend its newest version (refused where that
    reaches a month already approved or sent; a change from a date is
    `policy_add_version`). Notices already computed keep what they were computed with
    until the period is recomputed."""
    roles.check(actor, "policy.write")
    unknown = set(changes) - set(POLICY_FIELDS)
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    if "name" in changes:
        changes = {**changes, "name": clean_single_line(changes["name"], field="name", max_length=100)}
    if "time_zone" in changes:
        changes = {**changes, "time_zone": clean_time_zone(changes["time_zone"])}
    for key, value in changes.items():
        setattr(policy, key, value)
    policy.full_clean()
    policy.save()
    sync_newest(policy, actor=actor)
    return policy


@transaction.atomic
def policy_set_tiers(
    *, policy: SLAPolicy, tiers: Iterable[tuple[Decimal, Decimal]], actor: AbstractBaseUser | None = None
) -> list[CreditTier]:
    """Replace the policy's credit tiers ((below, credit) pairs) as a whole."""
    roles.check(actor, "policy.write")
    new = [CreditTier(policy=policy, below=Decimal(below), credit=Decimal(credit)) for below, credit in tiers]
    if len({t.below for t in new}) != len(new):
        raise ValidationError({"tiers": "Two tiers have the same threshold."})
    for tier in new:
        tier.full_clean(exclude=["policy"])
    CreditTier.objects.filter(policy=policy).delete()
    saved = CreditTier.objects.bulk_create(new)
    sync_newest(policy, actor=actor)
    return saved


@transaction.atomic
def policy_edit(
    *,
    policy: SLAPolicy,
    changes: dict[str, Any],
    tiers: Iterable[tuple[Decimal, Decimal]] | None = None,
    actor: AbstractBaseUser | None = None,
) -> SLAPolicy:
    """Edit a policy's terms and (when `tiers` is given) replace its tiers, in one
    transaction: a refused tier leaves the terms as they were."""
    roles.check(actor, "policy.write")
    policy = SLAPolicy.objects.select_for_update().get(pk=policy.pk)
    if changes:
        policy_update(policy=policy, changes=changes, actor=actor)
    if tiers is not None:
        policy_set_tiers(policy=policy, tiers=tiers, actor=actor)
    return policy


@transaction.atomic
def policy_delete(*, policy: SLAPolicy, actor: AbstractBaseUser | None = None) -> None:
    """Delete a policy nothing refers to. One that customers, entitlements or credit
    notices name is refused (InUse): notices are the record of what was owed under it."""
    roles.check(actor, "policy.write")
    policy = SLAPolicy.objects.select_for_update().get(pk=policy.pk)
    if CreditNotice.objects.filter(policy=policy).exists():
        raise InUse(
            f"The policy {policy.name!r} has credit notices, the record of what was owed under it: "
            "it cannot be deleted."
        )
    customers = Customer.objects.filter(policy=policy).count()
    entitled = CustomerEntitlement.objects.filter(policy=policy).count()
    if customers or entitled:
        raise InUse(
            f"The policy {policy.name!r} is in use by {customers} customer(s) and {entitled} "
            "entitlement(s): move them to another policy first."
        )
    policy.delete()
