"""Writes of the credits domain, by step: customers and policies, computing a month's
notices, approving them (one outbox email each), cancelling and delivery, the audit log.
See docs/adr/0007-sla-credits.md. Outside code imports from here."""

from __future__ import annotations

from credits.services.approve import SendSummary, credits_approve_and_send
from credits.services.compute import ComputeSummary, credits_compute, credits_compute_closed_month
from credits.services.customers import (
    CUSTOMER_FIELDS,
    ENTITLEMENT_FIELDS,
    clean_customer_name,
    customer_create,
    customer_delete,
    customer_entitle,
    customer_unentitle,
    customer_update,
)
from credits.services.delivery import credits_cancel, register_outbox_handlers
from credits.services.policies import (
    POLICY_FIELDS,
    POLICY_WEIGHT_FIELDS,
    clean_time_zone,
    policy_create,
    policy_delete,
    policy_edit,
    policy_set_tiers,
    policy_update,
    policy_weights,
)
from credits.services.versions import policy_add_version

__all__ = [
    "CUSTOMER_FIELDS",
    "ENTITLEMENT_FIELDS",
    "POLICY_FIELDS",
    "POLICY_WEIGHT_FIELDS",
    "ComputeSummary",
    "SendSummary",
    "clean_customer_name",
    "clean_time_zone",
    "credits_approve_and_send",
    "credits_cancel",
    "credits_compute",
    "credits_compute_closed_month",
    "customer_create",
    "customer_delete",
    "customer_entitle",
    "customer_unentitle",
    "customer_update",
    "policy_add_version",
    "policy_create",
    "policy_delete",
    "policy_edit",
    "policy_set_tiers",
    "policy_update",
    "policy_weights",
    "register_outbox_handlers",
]
