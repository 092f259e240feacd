"""The staff side: integrations and rules through the services, the test-payload page
(which writes nothing), and the alert groups list with its flag and publish action."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from alerts import services
from alerts.models import Alert, AlertGroup, Integration, MappingRule, ReceivedPayload
from incidents import services as incident_services
from incidents.models import Incident
from tests.alerts.helpers import cloud_storage_catalogue, load_payloads, make_integration, post

pytestmark = pytest.mark.django_db


def rules_formset(rows: list[dict[str, Any]], *, initial: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = {
        "rules-TOTAL_FORMS": str(len(rows)),
        "rules-INITIAL_FORMS": str(initial),
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        for key, value in row.items():
            data[f"rules-{index}-{key}"] = value
    return data


def test_staff_create_an_integration_with_its_default_rule(staff_client: Client) -> None:
    _, fallback, _, _ = cloud_storage_catalogue()
    response = staff_client.post(
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
    assert response.status_code == 200, response.content.decode()[:2000]
    integration = Integration.objects.get()
    assert integration.secret == "" and len(integration.secret_hash) == 64
    [rule] = integration.rules.all()
    assert (rule.is_default, rule.product, rule.matchers) == (True, fallback, {})


def test_staff_add_rules_and_the_services_refusals_show_on_the_form(staff_client: Client) -> None:
    gcs, fallback, region, _ = cloud_storage_catalogue()
    integration = make_integration("grafana", gcs=gcs, fallback=fallback)
    existing = list(integration.rules.order_by("-is_default", "position"))
    base = {
        "name": integration.name,
        "is_active": "on",
        "flap_debounce_seconds": "300",
        "reopen_within_minutes": "1440",
    }
    rows = [
        {
            "id": str(rule.pk),
            "integration": str(integration.pk),
            "position": str(rule.position),
            "is_default": "on" if rule.is_default else "",
            "matchers": ", ".join(f"{k}={v}" for k, v in rule.matchers.items()),
            "product": str(rule.product_id),
            "location": "",
            "location_labels": rule.location_labels,
            "level": rule.level,
            "impact": rule.impact,
            "auto_publish_after_minutes": "",
        }
        for rule in existing
    ]
    new_rule = {
        "integration": str(integration.pk),
        "position": "0",
        "matchers": "",  # a non-default rule must say what it matches
        "product": str(gcs.pk),
        "location": str(region.pk),
        "location_labels": "",
        "level": "major_outage",
        "impact": "major",
        "auto_publish_after_minutes": "15",
    }
    url = f"/admin/alerts/integration/{integration.pk}/change/"
    refused = staff_client.post(url, {**base, **rules_formset([*rows, new_rule], initial=len(rows))})
    assert refused.status_code == 200
    assert "Say which labels this rule matches" in refused.content.decode()
    assert MappingRule.objects.filter(integration=integration).count() == 3

    new_rule["matchers"] = "team=storage, env=prod"
    saved = staff_client.post(url, {**base, **rules_formset([*rows, new_rule], initial=len(rows))})
    assert saved.status_code == 302
    rule = MappingRule.objects.get(integration=integration, matchers={"team": "storage", "env": "prod"})
    assert (rule.location, rule.auto_publish_after_minutes, rule.level) == (region, 15, "major_outage")
    page = staff_client.get(url).content.decode()
    assert f"/api/v1/integrations/{integration.pk}/alerts/" in page
    assert "Test a payload" in page


def test_the_test_payload_page_shows_what_would_happen_and_writes_nothing(staff_client: Client) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    payload = json.dumps(load_payloads("alertmanager_cloud_storage_2026_10.json")[0])
    url = f"/admin/alerts/integration/{integration.pk}/test-payload/"
    assert staff_client.get(url).status_code == 200
    response = staff_client.post(url, {"payload": payload})
    html = response.content.decode()
    assert response.status_code == 200
    assert "would open: opens a draft incident (rule service=storage: Cloud Storage)" in html
    assert "Partial outage on Cloud Storage in us-central1 from 2026-10-08 11:00:00 UTC" in html
    assert Incident.objects.count() == Alert.objects.count() == ReceivedPayload.objects.count() == 0
    assert "Refused (400)" in staff_client.post(url, {"payload": "{"}).content.decode()


def test_the_alert_groups_list_flags_drafts_and_publishes_them(client: Client, staff_client: Client) -> None:
    gcs, fallback, _, _ = cloud_storage_catalogue()
    integration = make_integration("alertmanager", gcs=gcs, fallback=fallback)
    post(client, integration, load_payloads("alertmanager_cloud_storage_2026_10.json")[0])
    html = staff_client.get("/admin/alerts/alertgroup/").content.decode()
    assert "DRAFT" in html and "Partial outage of Cloud Storage in us-central1" in html
    group = AlertGroup.objects.get()
    detail = staff_client.get(f"/admin/alerts/alertgroup/{group.pk}/change/").content.decode()
    assert "opens a draft incident" in detail
    response = staff_client.post(
        "/admin/alerts/alertgroup/", {"action": "publish_drafts", "_selected_action": [str(group.pk)]}
    )
    assert response.status_code == 302
    assert Incident.objects.get().is_public
    # A public incident: publishing again is harmless.
    incident_services.incident_publish(incident=Incident.objects.get())
    assert services.alerts_tick().published == 0
