"""The services of integrations and rules refuse an actor without alerts.manage, whoever
calls them (admin, console, API or a script)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied

from alerts import services
from alerts.models import Integration
from tests.alerts.helpers import cloud_storage_catalogue, make_integration

pytestmark = pytest.mark.django_db


def _member(role: str) -> User:
    user = User.objects.create_user(role.lower(), is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


def test_a_responder_cannot_manage_integrations_and_an_integrations_member_can() -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    responder, owner = _member("Responder"), _member("Integrations")
    refusals = [
        lambda: services.integration_create(name="x", kind="generic", default_product=gcs, actor=responder),
        lambda: services.integration_update(integration=integration, changes={"name": "y"}, actor=responder),
        lambda: services.integration_rotate_secret(integration=integration, actor=responder),
        lambda: services.rule_save(
            integration=integration, product=gcs, matchers={"a": "b"}, actor=responder
        ),
        lambda: services.rule_delete(rule=integration.rules.exclude(is_default=True)[0], actor=responder),
    ]
    for call in refusals:
        with pytest.raises(PermissionDenied, match="manage alert integrations and rules"):
            call()
    assert Integration.objects.get().name == "alertmanager test"
    services.integration_update(integration=integration, changes={"name": "y"}, actor=owner)
    assert Integration.objects.get().name == "y"
