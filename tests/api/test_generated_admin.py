"""Acceptance (issue 31): the generated client drives the administration resources (SLA
policies and tiers, customers and entitlements, alert integrations and rules, API keys)
through create, read, update with If-Match and delete or revoke, against a live server;
the flow type-checks with mypy --strict against that client (tests/api/flows/admin.py)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from alerts.models import Integration
from api import services as api_services
from api.models import ApiKey
from credits.models import Customer, SLAPolicy
from tests.api.conftest import World
from tests.api.test_generated_client import _type_check_flows, generated_client

__all__ = ["generated_client"]  # the fixture, imported so that pytest finds it here


def test_the_generated_client_administers_policies_customers_integrations_and_keys(
    generated_client: Path, live_server: Any, world: World, alice: User
) -> None:
    _type_check_flows(generated_client)

    key = api_services.api_key_create(user=alice, name="admin flow", scope="write").raw
    importlib.import_module("flows.admin").run(live_server.url, key)

    # Everything the flow created and then deleted is gone; the key it made is revoked.
    assert not SLAPolicy.objects.filter(name="Flow Gold").exists()
    assert not Customer.objects.filter(name="Flow Initech").exists()
    assert not Integration.objects.filter(name="Flow Alertmanager").exists()
    made = ApiKey.objects.get(user=alice, name="flow deploy bot")
    assert made.revoked_at is not None and made.expires_at is not None
