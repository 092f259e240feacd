"""Role-matrix rows of the administration API (issue 31): SLA policies (policy.write),
customers and entitlements (customer.write), alert integrations and rules (alerts.manage)
and every user's API keys (users.manage), each through a staff write key."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from alerts import services as alert_services
from alerts.models import Integration
from credits import services as credit_services
from credits.models import Customer, SLAPolicy
from incidents.models import Product
from tests.api.keys import key_for
from tests.builders import make_product
from tests.roles.matrix import Row


def _bearer(user: User) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key_for(user, 'write')}")


def _post(user: User, url: str, body: dict[str, Any]) -> int:
    return _bearer(user).post(url, json.dumps(body), content_type="application/json").status_code


def _product() -> Product:
    return Product.objects.filter(slug="gmail").first() or make_product("Gmail")


def _policy() -> SLAPolicy:
    return credit_services.policy_create(name="Row policy", target=Decimal("99.9"), tiers=())


def _customer() -> Customer:
    return credit_services.customer_create(name="Row customer", billing_emails=["ap@row.example"])


def _integration() -> Integration:
    return alert_services.integration_create(name="Row alerts", kind="grafana", default_product=_product())


def _create_policy(client: Client, user: User) -> int:
    return _post(user, "/api/v1/sla-policies/", {"name": "Gold", "target": "99.9", "tiers": []})


def _delete_policy(client: Client, user: User) -> int:
    return _bearer(user).delete(f"/api/v1/sla-policies/{_policy().pk}/").status_code


def _create_customer(client: Client, user: User) -> int:
    return _post(user, "/api/v1/customers/", {"name": "Initech", "billing_emails": ["ap@initech.example"]})


def _entitle(client: Client, user: User) -> int:
    return _post(user, f"/api/v1/customers/{_customer().pk}/entitlements/", {"product": _product().slug})


def _delete_customer(client: Client, user: User) -> int:
    return _bearer(user).delete(f"/api/v1/customers/{_customer().pk}/").status_code


def _create_integration(client: Client, user: User) -> int:
    body = {"name": "Grafana", "kind": "grafana", "default_product": _product().slug}
    return _post(user, "/api/v1/alert-integrations/", body)


def _create_rule(client: Client, user: User) -> int:
    body = {"integration": _integration().pk, "product": _product().slug, "matchers": {"team": "storage"}}
    return _post(user, "/api/v1/alert-rules/", body)


def _delete_integration(client: Client, user: User) -> int:
    return _bearer(user).delete(f"/api/v1/alert-integrations/{_integration().pk}/").status_code


def _everyones_keys(client: Client, user: User) -> int:
    return _bearer(user).get("/api/v1/keys/?everyone=true").status_code


ROWS: list[Row] = [
    Row("policy.write", "api", "POST /api/v1/sla-policies/", _create_policy, ok=(201,)),
    Row("policy.write", "api", "DELETE /api/v1/sla-policies/<id>/", _delete_policy, ok=(204,)),
    Row("customer.write", "api", "POST /api/v1/customers/", _create_customer, ok=(201,)),
    Row("customer.write", "api", "POST /api/v1/customers/<id>/entitlements/", _entitle, ok=(201,)),
    Row("customer.write", "api", "DELETE /api/v1/customers/<id>/", _delete_customer, ok=(204,)),
    Row("alerts.manage", "api", "POST /api/v1/alert-integrations/", _create_integration, ok=(201,)),
    Row("alerts.manage", "api", "POST /api/v1/alert-rules/", _create_rule, ok=(201,)),
    Row("alerts.manage", "api", "DELETE /api/v1/alert-integrations/<id>/", _delete_integration, ok=(204,)),
    Row("users.manage", "api", "GET /api/v1/keys/?everyone=true", _everyones_keys, ok=(200,)),
]
