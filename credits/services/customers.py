"""Writes of customers and their entitlements."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from core import roles
from core.errors import InUse
from core.i18n import clean_language
from core.text import clean_single_line
from credits.models import CreditNotice, Customer, CustomerEntitlement, SLAPolicy
from incidents.models import Location, Product
from outbox import services as outbox

# A customer's editable fields: one list for the admin form, the API serializer and the
# services below.
CUSTOMER_FIELDS = (
    "name",
    "billing_emails",
    "policy",
    "sla_eligible",
    "term_end_date",
    "monthly_bill",
    "currency",
    "language",
)
# What an entitlement names: `customer_entitle`'s arguments besides the customer.
ENTITLEMENT_FIELDS = ("product", "location", "policy")


def clean_customer_name(name: str) -> str:
    # Names reach email bodies and admin lists; CR/LF would be a header injection waiting
    # for the first template that puts a name in a header.
    return clean_single_line(name, field="name", max_length=200)


@transaction.atomic
def customer_create(
    *,
    name: str,
    billing_emails: list[str],
    policy: SLAPolicy | None = None,
    sla_eligible: bool = True,
    term_end_date: date | None = None,
    monthly_bill: Decimal | None = None,
    currency: str = "USD",
    language: str = "en",
    entitlements: Iterable[Mapping[str, Any]] = (),
    actor: AbstractBaseUser | None = None,
) -> Customer:
    """A customer, and its `entitlements` (ENTITLEMENT_FIELDS each) in the same transaction."""
    roles.check(actor, "customer.write")
    customer = Customer(
        name=clean_customer_name(name),
        billing_emails=outbox.clean_addresses(billing_emails, field="billing_emails"),
        policy=policy,
        sla_eligible=sla_eligible,
        term_end_date=term_end_date,
        monthly_bill=monthly_bill,
        currency=clean_single_line(currency, field="currency", max_length=3).upper(),
        language=clean_language(language),
    )
    customer.full_clean()
    customer.save()
    for entitlement in entitlements:
        customer_entitle(customer=customer, actor=actor, **entitlement)
    return customer


@transaction.atomic
def customer_update(
    *,
    customer: Customer,
    entitlements: Iterable[Mapping[str, Any]] = (),
    actor: AbstractBaseUser | None = None,
    **fields: Any,
) -> Customer:
    """Edit a customer's CUSTOMER_FIELDS and add (or re-policy) `entitlements`."""
    roles.check(actor, "customer.write")
    if "name" in fields:
        fields["name"] = clean_customer_name(fields["name"])
    if "billing_emails" in fields:
        fields["billing_emails"] = outbox.clean_addresses(fields["billing_emails"], field="billing_emails")
    if "language" in fields:
        # The language of the customer's letters from now on (a queued one keeps its own).
        fields["language"] = clean_language(fields["language"])
    for key, value in fields.items():
        setattr(customer, key, value)
    customer.full_clean()
    customer.save()
    for entitlement in entitlements:
        customer_entitle(customer=customer, actor=actor, **entitlement)
    return customer


@transaction.atomic
def customer_entitle(
    *,
    customer: Customer,
    product: Product,
    location: Location | None = None,
    policy: SLAPolicy | None = None,
    actor: AbstractBaseUser | None = None,
) -> CustomerEntitlement:
    """Entitle the customer to a product (idempotent)."""
    roles.check(actor, "customer.write")
    entitlement, created = CustomerEntitlement.objects.get_or_create(
        customer=customer, product=product, location=location, defaults={"policy": policy}
    )
    if not created and entitlement.policy_id != (policy.pk if policy else None):
        entitlement.policy = policy
        entitlement.save(update_fields=["policy"])
    return entitlement


@transaction.atomic
def customer_unentitle(*, entitlement: CustomerEntitlement, actor: AbstractBaseUser | None = None) -> None:
    roles.check(actor, "customer.write")
    CustomerEntitlement.objects.filter(pk=entitlement.pk).delete()


@transaction.atomic
def customer_delete(*, customer: Customer, actor: AbstractBaseUser | None = None) -> None:
    """Delete a customer and its entitlements. One with credit notices is refused (InUse):
    the notices are the record of what it was owed; set `sla_eligible` false instead, which
    stops computing its credits and keeps its history."""
    roles.check(actor, "customer.write")
    customer = Customer.objects.select_for_update().get(pk=customer.pk)
    if CreditNotice.objects.filter(customer=customer).exists():
        raise InUse(
            f"The customer {customer.name!r} has credit notices, the record of what it was owed: it cannot "
            "be deleted. Set sla_eligible to false to stop computing its credits."
        )
    customer.delete()
