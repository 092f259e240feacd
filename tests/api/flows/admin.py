"""An operator automating the administration, through the generated client only: an SLA
policy with tiers, a customer with entitlements, an alert integration with a rule, and an
API key with an expiry; each created, read, updated with If-Match and deleted or revoked,
and a policy in use refused with 409.
"""

from __future__ import annotations

import datetime
from http import HTTPStatus
from typing import Any, TypeVar

from status_client import AuthenticatedClient
from status_client.api.alert_integrations import (
    alert_integrations_create,
    alert_integrations_destroy,
    alert_integrations_partial_update,
    alert_integrations_retrieve,
)
from status_client.api.alert_rules import (
    alert_rules_create,
    alert_rules_destroy,
    alert_rules_list,
    alert_rules_partial_update,
    alert_rules_retrieve,
)
from status_client.api.customers import (
    customers_create,
    customers_destroy,
    customers_entitlements_create,
    customers_entitlements_destroy,
    customers_partial_update,
    customers_retrieve,
)
from status_client.api.keys import keys_create, keys_destroy, keys_list, keys_retrieve
from status_client.api.products import products_list
from status_client.api.sla_policies import (
    sla_policies_create,
    sla_policies_destroy,
    sla_policies_partial_update,
    sla_policies_retrieve,
)
from status_client.models import (
    ApiKey,
    ApiKeyCreateRequest,
    Customer,
    CustomerRequest,
    Entitlement,
    EntitlementRequest,
    Error,
    IncidentImpactEnum,
    Integration,
    IntegrationCreateRequest,
    IntegrationKindEnum,
    IssuedIntegration,
    LevelEnum,
    NewApiKey,
    PaginatedProductList,
    PaginatedRuleList,
    PatchedCustomerRequest,
    PatchedIntegrationUpdateRequest,
    PatchedRuleRequest,
    PatchedSLAPolicyRequest,
    Rule,
    RuleRequest,
    RuleRequestMatchers,
    ScopeEnum,
    SLAPolicy,
    SLAPolicyRequest,
    TierRequest,
)
from status_client.types import Response

T = TypeVar("T")


def _ok(value: T | Error | None, kind: type[T]) -> T:
    if isinstance(value, Error):
        raise AssertionError(f"API error {value.error.code}: {value.error.message}")
    assert isinstance(value, kind), value
    return value


def _entitlements(customer: Customer) -> list[Entitlement]:
    # Optional in the request, so the schema cannot mark it required in the answer either.
    assert isinstance(customer.entitlements, list), customer
    return customer.entitlements


def _status(response: Response[Any], expected: HTTPStatus) -> None:
    assert response.status_code == expected, (response.status_code, response.content)


def _policy(staff: AuthenticatedClient) -> SLAPolicy:
    created = _ok(
        sla_policies_create.sync(
            client=staff,
            idempotency_key="admin-flow-policy",
            body=SLAPolicyRequest(
                name="Flow Gold",
                target="99.9",
                tiers=[TierRequest(below="99.9", credit="3"), TierRequest(below="99", credit="7")],
            ),
        ),
        SLAPolicy,
    )
    assert sorted(t.below for t in created.tiers) == ["99.000", "99.900"]
    etag = sla_policies_retrieve.sync_detailed(created.id, client=staff).headers["ETag"]
    edited = _ok(
        sla_policies_partial_update.sync(
            created.id,
            client=staff,
            if_match=etag,
            body=PatchedSLAPolicyRequest(target="99.95", tiers=[TierRequest(below="99.95", credit="5")]),
        ),
        SLAPolicy,
    )
    assert edited.target == "99.950" and [t.credit for t in edited.tiers] == ["5.00"]
    # The old ETag no longer matches: a second writer is told, not overwritten.
    stale = sla_policies_partial_update.sync_detailed(
        created.id, client=staff, if_match=etag, body=PatchedSLAPolicyRequest(description="late")
    )
    _status(stale, HTTPStatus.PRECONDITION_FAILED)
    return edited


def _customer(staff: AuthenticatedClient, policy: SLAPolicy, slugs: list[str]) -> Customer:
    created = _ok(
        customers_create.sync(
            client=staff,
            body=CustomerRequest(
                name="Flow Initech",
                billing_emails=["ap@initech.example"],
                policy=policy.id,
                entitlements=[EntitlementRequest(product=slugs[0])],
            ),
        ),
        Customer,
    )
    assert [e.product for e in _entitlements(created)] == [slugs[0]]
    etag = customers_retrieve.sync_detailed(created.id, client=staff).headers["ETag"]
    edited = _ok(
        customers_partial_update.sync(
            created.id, client=staff, if_match=etag, body=PatchedCustomerRequest(monthly_bill="1200.00")
        ),
        Customer,
    )
    assert edited.monthly_bill == "1200.00"
    added = _ok(
        customers_entitlements_create.sync(
            created.id, client=staff, body=EntitlementRequest(product=slugs[1], policy=policy.id)
        ),
        Entitlement,
    )
    now = _ok(customers_retrieve.sync(created.id, client=staff), Customer)
    assert sorted(e.product for e in _entitlements(now)) == sorted(slugs[:2])
    removed = customers_entitlements_destroy.sync_detailed(created.id, added.id, client=staff)
    _status(removed, HTTPStatus.NO_CONTENT)
    return _ok(customers_retrieve.sync(created.id, client=staff), Customer)


def _integration(staff: AuthenticatedClient, slugs: list[str]) -> None:
    issued = _ok(
        alert_integrations_create.sync(
            client=staff,
            body=IntegrationCreateRequest(
                name="Flow Alertmanager", kind=IntegrationKindEnum.ALERTMANAGER, default_product=slugs[0]
            ),
        ),
        IssuedIntegration,
    )
    assert len(issued.secret) >= 32 and [r.is_default for r in issued.rules] == [True]
    etag = alert_integrations_retrieve.sync_detailed(issued.id, client=staff).headers["ETag"]
    edited = _ok(
        alert_integrations_partial_update.sync(
            issued.id,
            client=staff,
            if_match=etag,
            body=PatchedIntegrationUpdateRequest(flap_debounce_seconds=60, is_active=False),
        ),
        Integration,
    )
    assert edited.flap_debounce_seconds == 60 and not edited.is_active
    rule = _ok(
        alert_rules_create.sync(
            client=staff,
            body=RuleRequest(
                integration=issued.id,
                product=slugs[1],
                matchers=RuleRequestMatchers.from_dict({"service": "storage"}),
                level=LevelEnum.MAJOR_OUTAGE,
                impact=IncidentImpactEnum.MAJOR,
                position=1,
            ),
        ),
        Rule,
    )
    rule_etag = alert_rules_retrieve.sync_detailed(rule.id, client=staff).headers["ETag"]
    moved = _ok(
        alert_rules_partial_update.sync(
            rule.id, client=staff, if_match=rule_etag, body=PatchedRuleRequest(auto_publish_after_minutes=10)
        ),
        Rule,
    )
    assert moved.auto_publish_after_minutes == 10 and moved.level == LevelEnum.MAJOR_OUTAGE
    rules = _ok(alert_rules_list.sync(client=staff, integration=issued.id), PaginatedRuleList)
    assert rules.count == 2
    _status(alert_rules_destroy.sync_detailed(rule.id, client=staff), HTTPStatus.NO_CONTENT)
    _status(alert_integrations_destroy.sync_detailed(issued.id, client=staff), HTTPStatus.NO_CONTENT)
    _status(alert_integrations_retrieve.sync_detailed(issued.id, client=staff), HTTPStatus.NOT_FOUND)


def _key(staff: AuthenticatedClient) -> NewApiKey:
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=30)
    new = _ok(
        keys_create.sync(
            client=staff,
            body=ApiKeyCreateRequest(name="flow deploy bot", scope=ScopeEnum.READ, expires_at=expires),
        ),
        NewApiKey,
    )
    assert new.key.startswith("sp_") and new.expires_at is not None
    assert abs((new.expires_at - expires).total_seconds()) < 1
    listed = keys_list.sync(client=staff)
    assert isinstance(listed, list) and new.id in [k.id for k in listed]
    etag = keys_retrieve.sync_detailed(new.id, client=staff).headers["ETag"]
    _status(keys_destroy.sync_detailed(new.id, client=staff, if_match=etag), HTTPStatus.NO_CONTENT)
    revoked = _ok(keys_retrieve.sync(new.id, client=staff), ApiKey)
    assert revoked.revoked_at is not None
    return new


def run(base_url: str, key: str) -> None:
    staff = AuthenticatedClient(base_url=base_url, token=key)
    products = _ok(products_list.sync(client=staff), PaginatedProductList)
    slugs = [p.slug for p in products.results]
    assert len(slugs) >= 2, slugs

    policy = _policy(staff)
    customer = _customer(staff, policy, slugs)
    assert [e.product for e in _entitlements(customer)] == [slugs[0]]

    # History refers to the policy (a customer holds it): refused with 409, nothing deleted.
    in_use = sla_policies_destroy.sync_detailed(policy.id, client=staff)
    _status(in_use, HTTPStatus.CONFLICT)
    assert isinstance(in_use.parsed, Error) and in_use.parsed.error.code == "in_use"
    _ok(sla_policies_retrieve.sync(policy.id, client=staff), SLAPolicy)

    _status(customers_destroy.sync_detailed(customer.id, client=staff), HTTPStatus.NO_CONTENT)
    _status(sla_policies_destroy.sync_detailed(policy.id, client=staff), HTTPStatus.NO_CONTENT)
    _status(sla_policies_retrieve.sync_detailed(policy.id, client=staff), HTTPStatus.NOT_FOUND)

    _integration(staff, slugs)
    _key(staff)
