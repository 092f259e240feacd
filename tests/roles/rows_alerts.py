"""Role matrix rows of alert intake: the admin's writes of integrations and rules (the
`alerts.manage` action) and its publish of alert drafts (`incident.publish_draft`)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from alerts import services
from alerts.models import AlertGroup, Integration
from incidents import services as incidents
from tests.builders import make_product
from tests.roles.matrix import Row


def _setup() -> None:
    product = make_product("Cloud Storage", slug="cloud-storage")
    integration = services.integration_create(name="Prometheus", kind="alertmanager", default_product=product)
    incident = incidents.incident_open(
        title="Cloud Storage write errors", impact="minor", body="Investigating.", is_public=False
    )
    AlertGroup.objects.create(integration=integration, group_key="g", incident=incident)


def _integration() -> Integration:
    return Integration.objects.get(name="Prometheus")


def _add(client: Client, user: User) -> int:
    product = _integration().rules.get().product
    data = {
        "name": "Grafana",
        "kind": "grafana",
        "is_active": "on",
        "flap_debounce_seconds": "300",
        "reopen_within_minutes": "1440",
        "default_product": str(product.pk),
        "default_level": "partial_outage",
        "default_impact": "minor",
    }
    response = client.post("/admin/alerts/integration/add/", data)
    return response.status_code if response.status_code == 403 or Integration.objects.count() == 2 else 400


def _change_with_a_rule(client: Client, user: User) -> int:
    integration = _integration()
    default = integration.rules.get()
    data = {
        "name": "Prometheus prod",
        "is_active": "on",
        "flap_debounce_seconds": "300",
        "reopen_within_minutes": "1440",
        "rules-TOTAL_FORMS": "2",
        "rules-INITIAL_FORMS": "1",
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(
        [
            {"id": str(default.pk), "is_default": "on", "matchers": "", "position": "0"},
            {"id": "", "is_default": "", "matchers": "service=storage", "position": "1"},
        ]
    ):
        row |= {
            "integration": str(integration.pk),
            "product": str(default.product_id),
            "location": "",
            "location_labels": "zone,region",
            "level": "partial_outage",
            "impact": "minor",
            "auto_publish_after_minutes": "",
        }
        data |= {f"rules-{index}-{key}": value for key, value in row.items()}
    response = client.post(f"/admin/alerts/integration/{integration.pk}/change/", data)
    if response.status_code == 403:
        return 403
    return response.status_code if integration.rules.count() == 2 else 400


def _rotate(client: Client, user: User) -> int:
    integration = _integration()
    before = integration.secret_hash
    response = client.post(
        "/admin/alerts/integration/", {"action": "rotate_secret", "_selected_action": [str(integration.pk)]}
    )
    integration.refresh_from_db()
    # The action is not offered to a role without the permission: the list answers with
    # "No action selected" and nothing changes; the service refuses on its own too.
    if integration.secret_hash == before:
        return 403
    return response.status_code


def _publish(client: Client, user: User) -> int:
    group = AlertGroup.objects.get()
    client.post(
        "/admin/alerts/alertgroup/", {"action": "publish_drafts", "_selected_action": [str(group.pk)]}
    )
    group.incident.refresh_from_db()
    return 200 if group.incident.is_public else 403


ROWS: list[Row] = [
    Row("alerts.manage", "admin", "POST /admin/alerts/integration/add/", _add, setup=_setup),
    Row(
        "alerts.manage",
        "admin",
        "POST /admin/alerts/integration/<id>/change/ (with a new rule)",
        _change_with_a_rule,
        setup=_setup,
    ),
    Row(
        "alerts.manage",
        "admin",
        "POST /admin/alerts/integration/ action rotate_secret",
        _rotate,
        setup=_setup,
    ),
    Row(
        "incident.publish_draft",
        "admin",
        "POST /admin/alerts/alertgroup/ action publish_drafts",
        _publish,
        setup=_setup,
    ),
]
