"""Bearer secrets (Alertmanager, Grafana) are stored as a hash and shown once: on the page
that creates the integration or rotates its secret, never again."""

from __future__ import annotations

import hashlib
import importlib
import re

import pytest
from django.apps import apps
from django.test import Client

from alerts import services
from alerts.models import Integration
from tests.alerts.helpers import cloud_storage_catalogue, make_integration, post

pytestmark = pytest.mark.django_db

PAYLOAD = {"version": "4", "groupKey": "g", "alerts": []}


def _shown(page: str) -> str:
    [secret] = re.findall(r"<code data-issued-secret>([^<]+)</code>", page)
    return secret


def test_the_admin_shows_a_new_bearer_secret_once_and_keeps_only_its_hash(staff_client: Client) -> None:
    _, fallback, _, _ = cloud_storage_catalogue()
    page = staff_client.post(
        "/admin/alerts/integration/add/",
        {
            "name": "Prometheus",
            "kind": "alertmanager",
            "is_active": "on",
            "flap_debounce_seconds": "300",
            "reopen_within_minutes": "1440",
            "default_product": str(fallback.pk),
            "default_level": "partial_outage",
            "default_impact": "minor",
        },
    )
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    secret = _shown(page.content.decode())
    integration = Integration.objects.get()
    assert integration.secret == ""
    assert integration.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    change = staff_client.get(f"/admin/alerts/integration/{integration.pk}/change/").content.decode()
    assert secret not in change and integration.secret_hash not in change
    assert "Shown once when issued" in change
    assert secret not in staff_client.get("/admin/alerts/integration/").content.decode()
    assert post(Client(), integration, PAYLOAD, secret=secret).status_code == 200
    assert post(Client(), integration, PAYLOAD, secret=integration.secret_hash).status_code == 401


def test_rotating_shows_the_new_secret_once_and_the_old_one_stops_working(staff_client: Client) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("grafana", gcs=gcs, fallback=fallback)
    old = integration.issued_secret
    page = staff_client.post(
        "/admin/alerts/integration/",
        {"action": "rotate_secret", "_selected_action": [str(integration.pk)]},
    )
    assert page.status_code == 200
    new = _shown(page.content.decode())
    assert new != old
    assert post(Client(), integration, PAYLOAD, secret=old).status_code == 401
    assert post(Client(), integration, PAYLOAD, secret=new).status_code == 200
    change = staff_client.get(f"/admin/alerts/integration/{integration.pk}/change/").content.decode()
    assert new not in change


def test_the_migration_hashes_existing_bearer_secrets_and_keeps_hmac_keys() -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    am = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    generic = services.integration_create(name="generic", kind="generic", default_product=fallback)
    # As the rows stood before the migration: every secret in clear.
    Integration.objects.filter(pk=am.pk).update(secret="clear-token", secret_hash="")
    migration = importlib.import_module("alerts.migrations.0004_hash_bearer_secrets")
    migration.hash_bearer_secrets(apps, None)
    am.refresh_from_db()
    assert (am.secret, am.secret_hash) == ("", hashlib.sha256(b"clear-token").hexdigest())
    assert post(Client(), am, PAYLOAD, secret="clear-token").status_code == 200
    generic.refresh_from_db()
    assert generic.secret == generic.issued_secret and generic.secret_hash == ""
