"""The administration API (issue 31): SLA policies, customers, alert integrations and rules.

Deletes that history refers to are 409 and change nothing; every write needs a staff
write key whose owner's role holds the duty (as in the admin); bad input is a 400 naming
the field, and nothing changes.
"""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal as D
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from alerts import services as alert_services
from alerts.models import Alert, Integration, MappingRule
from credits import services as credit_services
from credits.models import CreditNotice, CreditTier, Customer, SLAPolicy
from tests.api.conftest import World
from tests.api.keys import key_for

pytestmark = pytest.mark.django_db


def _client(user: User, scope: str = "write") -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key_for(user, scope)}")


def _member(role: str) -> User:
    user = User.objects.create_user(f"member-{role.lower().replace(' ', '-')}", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


def _send(client: Client, method: str, url: str, body: Any = None, **headers: str) -> Any:
    call = getattr(client, method)
    if body is None:
        return call(url, **headers)
    return call(url, json.dumps(body), content_type="application/json", **headers)


def _policy(name: str = "Gold") -> SLAPolicy:
    return credit_services.policy_create(name=name, target=D("99.9"), tiers=[(D("99.9"), D("3"))])


def _notice(customer: Customer, policy: SLAPolicy) -> CreditNotice:
    now = timezone.now()
    return CreditNotice.objects.create(
        customer=customer,
        policy=policy,
        period="2026-09",
        period_start=now,
        period_end=now,
        period_minutes=D(43200),
        downtime_minutes=D(100),
        uptime_percent=D(99),
        credit=D(3),
        unit=policy.unit,
        claim_deadline=date(2026, 12, 1),
        computed_at=now,
    )


def _integration(world: World, name: str = "Prometheus") -> Integration:
    return alert_services.integration_create(name=name, kind="alertmanager", default_product=world.gmail)


# --- SLA policies ---------------------------------------------------------------------------


def test_a_policy_is_updated_with_its_tiers_and_deleted_when_unused(alice: User) -> None:
    policy = _policy()
    api = _client(alice)
    etag = api.get(f"/api/v1/sla-policies/{policy.pk}/")["ETag"]
    body = {"claim_window_days": 45, "tiers": [{"below": "99.5", "credit": "10"}]}
    edited = _send(api, "patch", f"/api/v1/sla-policies/{policy.pk}/", body, HTTP_IF_MATCH=etag)
    assert edited.status_code == 200, edited.content
    assert edited.json()["tiers"] == [{"below": "99.500", "credit": "10.00"}]
    assert list(policy.tiers.values_list("below", flat=True)) == [D("99.5")]
    # Without `tiers`, the tiers stay as they are.
    assert _send(api, "patch", f"/api/v1/sla-policies/{policy.pk}/", {"cap": "20"}).status_code == 200
    assert policy.tiers.count() == 1
    assert api.delete(f"/api/v1/sla-policies/{policy.pk}/").status_code == 204
    assert not SLAPolicy.objects.filter(pk=policy.pk).exists()
    assert not CreditTier.objects.filter(policy_id=policy.pk).exists()


def test_a_refused_tier_leaves_the_terms_as_they_were(alice: User) -> None:
    policy = _policy()
    body = {"target": "99.5", "tiers": [{"below": "99", "credit": "1"}, {"below": "99", "credit": "2"}]}
    refused = _send(_client(alice), "patch", f"/api/v1/sla-policies/{policy.pk}/", body)
    assert refused.status_code == 400
    assert "tiers" in refused.json()["errors"]
    policy.refresh_from_db()
    assert policy.target == D("99.9") and policy.tiers.count() == 1


def test_deleting_a_policy_in_use_is_a_409_that_says_why(alice: User, world: World) -> None:
    api = _client(alice)
    held = _policy("Held")
    credit_services.customer_create(name="Initech", billing_emails=["ap@initech.example"], policy=held)
    answer = api.delete(f"/api/v1/sla-policies/{held.pk}/")
    assert answer.status_code == 409
    error = answer.json()
    assert error["code"] == "in_use" and "1 customer(s)" in error["detail"]
    assert SLAPolicy.objects.filter(pk=held.pk).exists()

    # Named by an entitlement only.
    entitled = _policy("Entitled")
    other = credit_services.customer_create(name="Hooli", billing_emails=["ap@hooli.example"])
    credit_services.customer_entitle(customer=other, product=world.gmail, policy=entitled)
    assert api.delete(f"/api/v1/sla-policies/{entitled.pk}/").status_code == 409

    # Named by a credit notice: history, even once no customer holds the policy.
    noticed = _policy("Noticed")
    _notice(other, noticed)
    answer = api.delete(f"/api/v1/sla-policies/{noticed.pk}/")
    assert answer.status_code == 409 and "credit notices" in answer.json()["detail"]
    assert SLAPolicy.objects.count() == 3


# --- Customers and entitlements ---------------------------------------------------------------


def test_entitlements_are_added_and_removed_one_at_a_time(alice: User, world: World) -> None:
    api = _client(alice)
    customer = credit_services.customer_create(name="Initech", billing_emails=["ap@initech.example"])
    url = f"/api/v1/customers/{customer.pk}/entitlements/"
    added = _send(api, "post", url, {"product": world.storage.slug, "location": world.zone.name})
    assert added.status_code == 201, added.content
    entitlement_id = added.json()["id"]
    assert customer.entitlements.get().pk == entitlement_id
    etag = api.get(f"/api/v1/customers/{customer.pk}/")["ETag"]
    # The customer's ETag guards its entitlements: a stale one is a 412.
    _send(api, "patch", f"/api/v1/customers/{customer.pk}/", {"currency": "eur"})
    stale = api.delete(f"{url}{entitlement_id}/", HTTP_IF_MATCH=etag)
    assert stale.status_code == 412 and customer.entitlements.exists()
    assert api.delete(f"{url}{entitlement_id}/").status_code == 204
    assert not customer.entitlements.exists()
    assert api.delete(f"{url}{entitlement_id}/").status_code == 404


def test_an_entitlement_of_another_customer_is_not_found(alice: User, world: World) -> None:
    mine = credit_services.customer_create(name="Initech", billing_emails=["ap@initech.example"])
    theirs = credit_services.customer_create(name="Hooli", billing_emails=["ap@hooli.example"])
    entitlement = credit_services.customer_entitle(customer=theirs, product=world.gmail)
    answer = _client(alice).delete(f"/api/v1/customers/{mine.pk}/entitlements/{entitlement.pk}/")
    assert answer.status_code == 404
    assert theirs.entitlements.exists()


def test_a_customer_is_deleted_unless_it_has_credit_notices(alice: User, world: World) -> None:
    api = _client(alice)
    gone = credit_services.customer_create(
        name="Initech", billing_emails=["ap@initech.example"], entitlements=[{"product": world.gmail}]
    )
    assert api.delete(f"/api/v1/customers/{gone.pk}/").status_code == 204
    assert not Customer.objects.filter(pk=gone.pk).exists()

    kept = credit_services.customer_create(name="Hooli", billing_emails=["ap@hooli.example"])
    _notice(kept, _policy())
    answer = api.delete(f"/api/v1/customers/{kept.pk}/")
    assert answer.status_code == 409
    assert "sla_eligible" in answer.json()["detail"]
    assert Customer.objects.filter(pk=kept.pk).exists()


# --- Alert integrations and rules -------------------------------------------------------------


def test_an_integration_shows_its_secret_once(alice: User, world: World) -> None:
    api = _client(alice)
    body = {"name": "Grafana", "kind": "grafana", "default_product": world.gmail.slug}
    created = _send(api, "post", "/api/v1/alert-integrations/", body)
    assert created.status_code == 201, created.content
    secret = created.json()["secret"]
    integration = Integration.objects.get(name="Grafana")
    assert created["Location"].endswith(f"/alert-integrations/{integration.pk}/")
    # The intake takes the secret; a read never shows it again.
    assert alert_services.integration_authenticate(
        integration_id=integration.pk, authorization=f"Bearer {secret}", signature="", body=b"{}"
    )
    read = api.get(f"/api/v1/alert-integrations/{integration.pk}/")
    assert "secret" not in read.json() and secret not in read.content.decode()
    rotated = api.post(f"/api/v1/alert-integrations/{integration.pk}/rotate-secret/")
    assert rotated.status_code == 200 and rotated.json()["secret"] != secret


def test_an_integration_that_received_alerts_is_not_deleted(alice: User, world: World) -> None:
    api = _client(alice)
    unused = _integration(world, "Unused")
    assert api.delete(f"/api/v1/alert-integrations/{unused.pk}/").status_code == 204
    assert not MappingRule.objects.filter(integration_id=unused.pk).exists()

    used = _integration(world, "Used")
    now = timezone.now()
    Alert.objects.create(
        integration=used, fingerprint="f1", status="firing", starts_at=now, last_received_at=now
    )
    answer = api.delete(f"/api/v1/alert-integrations/{used.pk}/")
    assert answer.status_code == 409
    assert "is_active" in answer.json()["detail"]
    assert Integration.objects.filter(pk=used.pk).exists()


def test_rules_are_created_updated_and_deleted_but_the_default_stays(alice: User, world: World) -> None:
    api = _client(alice)
    integration = _integration(world)
    body = {
        "integration": integration.pk,
        "product": world.storage.slug,
        "matchers": {"service": "storage"},
        "level": "major_outage",
    }
    created = _send(api, "post", "/api/v1/alert-rules/", body)
    assert created.status_code == 201, created.content
    rule_id = created.json()["id"]
    edited = _send(api, "patch", f"/api/v1/alert-rules/{rule_id}/", {"location": world.region.name})
    assert edited.status_code == 200, edited.content
    rule = MappingRule.objects.get(pk=rule_id)
    # The fields not sent are kept.
    assert rule.location == world.region and rule.matchers == {"service": "storage"}
    assert rule.level == "major_outage"
    listed = api.get(f"/api/v1/alert-rules/?integration={integration.pk}").json()
    assert listed["count"] == 2
    default = MappingRule.objects.get(integration=integration, is_default=True)
    refused = api.delete(f"/api/v1/alert-rules/{default.pk}/")
    assert refused.status_code == 400 and "default rule" in refused.json()["detail"]
    moved = _send(
        api, "patch", f"/api/v1/alert-rules/{rule_id}/", {"integration": _integration(world, "B").pk}
    )
    assert moved.status_code == 400 and "integration" in moved.json()["errors"]
    assert api.delete(f"/api/v1/alert-rules/{rule_id}/").status_code == 204
    assert MappingRule.objects.filter(integration=integration).count() == 1


# --- Bad input: a 400 naming the field, nothing changed ---------------------------------------


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/sla-policies/", {"name": "X", "target": "0", "tiers": []}, "target"),
        ("/api/v1/sla-policies/", {"name": "X", "target": "99", "tiers": [], "colour": "gold"}, "colour"),
        ("/api/v1/customers/", {"name": "X", "billing_emails": ["not an address"]}, "billing_emails.0"),
        ("/api/v1/customers/", {"name": "X", "billing_emails": []}, "billing_emails"),
        ("/api/v1/alert-integrations/", {"name": "X", "kind": "nagios", "default_product": "gmail"}, "kind"),
        (
            "/api/v1/alert-integrations/",
            {"name": "X", "kind": "grafana", "default_product": "nope"},
            "default_product",
        ),
        (
            "/api/v1/alert-rules/",
            {"integration": 0, "product": "gmail", "matchers": {"a": "b"}},
            "integration",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    alice: User, world: World, url: str, body: Any, field: str
) -> None:
    before = (SLAPolicy.objects.count(), Customer.objects.count(), Integration.objects.count())
    answer = _send(_client(alice), "post", url, body)
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["errors"], answer.json()
    assert (SLAPolicy.objects.count(), Customer.objects.count(), Integration.objects.count()) == before


def test_a_rule_without_matchers_is_refused_by_the_service(alice: User, world: World) -> None:
    integration = _integration(world)
    body = {"integration": integration.pk, "product": world.storage.slug}
    answer = _send(_client(alice), "post", "/api/v1/alert-rules/", body)
    assert answer.status_code == 400 and "matchers" in answer.json()["errors"]
    assert MappingRule.objects.filter(integration=integration).count() == 1


# --- Permissions ------------------------------------------------------------------------------

WRITES = [
    ("post", "/api/v1/sla-policies/", {"name": "X", "target": "99", "tiers": []}),
    ("post", "/api/v1/customers/", {"name": "X", "billing_emails": ["a@example.org"]}),
    ("post", "/api/v1/alert-integrations/", {"name": "X", "kind": "grafana", "default_product": "gmail"}),
]


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_a_read_key_or_a_non_staff_key_cannot_write(
    alice: User, bob: User, world: World, method: str, url: str, body: Any
) -> None:
    assert _send(_client(alice, "read"), method, url, body).status_code == 403
    assert _send(_client(bob), method, url, body).status_code == 403
    assert _client(bob).get(url).status_code == 403
    assert Client().get(url).status_code == 401


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        ("Viewer", set()),
        ("Responder", set()),
        ("Finance", {"/api/v1/sla-policies/", "/api/v1/customers/"}),
        ("Integrations", {"/api/v1/alert-integrations/"}),
    ],
)
def test_each_write_needs_its_duty(world: World, role: str, allowed: set[str]) -> None:
    api = _client(_member(role))
    for method, url, body in WRITES:
        answer = _send(api, method, url, body)
        if url in allowed:
            assert answer.status_code == 201, (role, url, answer.content)
        else:
            assert answer.status_code == 403, (role, url, answer.status_code)
            assert "Your role does not allow you to" in answer.json()["detail"]


def test_deletes_need_the_duty_too(world: World) -> None:
    policy = _policy()
    integration = _integration(world)
    customer = credit_services.customer_create(name="Initech", billing_emails=["ap@initech.example"])
    finance, integrations = _client(_member("Finance")), _client(_member("Integrations"))
    assert integrations.delete(f"/api/v1/sla-policies/{policy.pk}/").status_code == 403
    assert integrations.delete(f"/api/v1/customers/{customer.pk}/").status_code == 403
    assert finance.delete(f"/api/v1/alert-integrations/{integration.pk}/").status_code == 403
    rule = MappingRule.objects.get(integration=integration)
    assert finance.delete(f"/api/v1/alert-rules/{rule.pk}/").status_code == 403
    assert (
        SLAPolicy.objects.filter(pk=policy.pk).exists() and Customer.objects.filter(pk=customer.pk).exists()
    )
    assert Integration.objects.filter(pk=integration.pk).exists()
