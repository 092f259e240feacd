"""`load_demo`'s message templates and alert integration, and the README's "Try an alert"
command: its body, parsed out of the README, is accepted by the demo integration and opens
the draft the README describes."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Model
from django.test import Client, override_settings

from alerts import services as alert_services
from alerts.models import Alert, AlertGroup, Integration, MappingRule
from console.models import MessageTemplate
from demo import alerts as alerts_demo
from incidents.models import Incident
from tests.conftest import service_missing

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[2] / "README.md"
NOW_IN_SHELL = "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
MODELS: tuple[type[Model], ...] = (MessageTemplate, Integration, MappingRule)


# The demo retells the first alert of the public Cloud Storage 2026 incident
# (demo.alerts.past_alert); the README alert opens a draft, which is private.


def load_demo() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def snapshot() -> dict[str, list[dict[str, Any]]]:
    return {m.__name__: list(m._default_manager.order_by("pk").values()) for m in MODELS}


def readme_command() -> str:
    section = README.read_text().split("### Try an alert", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```sh\n(.*?)```", section, re.S)
    return block


def readme_request(started_at: str) -> tuple[str, str, bytes]:
    """The README command's path, bearer token and body (its shell time filled in)."""
    command = readme_command()
    url = re.search(r"curl .*?(http://\S+)", command)
    token = re.search(r"Authorization: Bearer ([^'\s]+)'", command)
    body = re.search(r"<<EOF\n(.*?)\nEOF", command, re.S)
    assert url and token and body, command
    assert NOW_IN_SHELL in body.group(1)
    path = re.sub(r"^http://[^/]+", "", url.group(1))
    return path, token.group(1), body.group(1).replace(NOW_IN_SHELL, started_at).encode()


def demo_integration() -> Integration:
    return Integration.objects.get(name=alerts_demo.INTEGRATION_NAME)


def test_it_loads_templates_and_an_integration_once() -> None:
    first = load_demo()
    before = snapshot()
    second = load_demo()

    assert "Message templates: 5 created" in first
    assert "integration 'Prometheus (demo)' created" in first
    assert "Message templates: 0 created" in second
    assert "Demo data already present; nothing changed." in second
    assert snapshot() == before
    assert {(t.name, t.kind, t.status) for t in MessageTemplate.objects.all()} == {
        ("Investigating", "incident", "investigating"),
        ("Identified", "update", "identified"),
        ("Monitoring", "update", "monitoring"),
        ("Resolved", "update", "resolved"),
        ("Maintenance under way", "update", "in_progress"),
    }
    integration = demo_integration()
    rules = [
        (r.is_default, r.matchers, r.product.slug, r.auto_publish_after_minutes)
        for r in integration.rules.all()
    ]
    assert rules == [
        (True, {}, "compute-engine", None),
        (False, {"service": "storage", "severity": "critical"}, "cloud-storage", 10),
        (False, {"service": "storage"}, "cloud-storage", None),
        (False, {"service": "compute"}, "compute-engine", None),
        (False, {"service": "bigquery"}, "bigquery", None),
    ]


def test_a_template_fills_the_console_forms(client: Client) -> None:
    load_demo()
    client.force_login(User.objects.get(username="responder"))
    investigating = MessageTemplate.objects.get(name="Investigating")
    form = client.get(f"/manage/declare/?template={investigating.pk}").context["form"]
    assert form.initial["title"] == "Errors and slow responses"
    assert form.initial["status"] == "investigating"
    assert form.initial["body"].startswith("We are looking into reports")
    page = client.get("/manage/templates/").content.decode()
    for name in ("Identified", "Monitoring", "Resolved", "Maintenance under way"):
        assert name in page


@override_settings(SITE_URL="http://127.0.0.1:8123")
def test_make_run_prints_where_to_fire_the_test_alert() -> None:
    output = load_demo()
    integration = demo_integration()

    url = f"http://127.0.0.1:8123/api/v1/integrations/{integration.pk}/alerts/"
    assert output.splitlines()[-1].startswith(f"Test alert: POST {url} with 'Authorization: Bearer ")
    _, token, _ = readme_request("2026-12-01T10:00:00Z")
    assert f"Bearer {token}'" in output.splitlines()[-1]
    # A rotated token is not advertised.
    alert_services.integration_rotate_secret(integration=integration)
    assert "Test alert" not in load_demo()


def test_the_readme_alert_opens_the_draft_it_describes(client: Client) -> None:
    load_demo()
    integration = demo_integration()
    path, token, body = readme_request("2026-12-01T10:00:00Z")
    # The README names integration 1 (a fresh database); here the demo's own number.
    assert path == "/api/v1/integrations/1/alerts/"
    path = f"/api/v1/integrations/{integration.pk}/alerts/"

    def fire() -> Any:
        return client.generic(
            "POST", path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )

    response = fire()
    assert response.status_code == 200, response.content
    assert [a["action"] for a in response.json()["alerts"]] == ["open"]
    draft = Incident.objects.get(alert_group__integration=integration, is_public=False)
    assert (draft.is_public, draft.title) == (False, "Partial outage of Cloud Storage in us-central1 (Iowa)")
    window = draft.windows.select_related("product", "location").get()
    assert (window.product.slug, window.location.name if window.location else None) == (
        "cloud-storage",
        "us-central1",
    )
    assert "Write error rate above 5% for 10 minutes" in draft.internal_notes
    assert "5%" not in draft.title + draft.updates.get().body
    assert AlertGroup.objects.get(incident=draft).publish_due_at is None  # held for review

    # Where the README says to look: the console's Drafts, as the responder.
    console = Client()
    console.force_login(User.objects.get(username="responder"))
    now_page = console.get("/manage/").content.decode()
    drafts = now_page.split('id="drafts-title"', 1)[1].split("</section>", 1)[0]
    assert draft.title in drafts and "Prometheus (demo)" in drafts

    # Sending it again changes nothing.
    again = fire()
    assert [a["action"] for a in again.json()["alerts"]] == ["duplicate"]
    assert Alert.objects.filter(integration=integration, group__incident=draft).count() == 1
    assert Incident.objects.filter(alert_group__integration=integration, is_public=False).count() == 1


@pytest.mark.services
def test_the_readme_curl_command_works_as_pasted(live_server: Any) -> None:
    if shutil.which("curl") is None or shutil.which("date") is None:
        service_missing("curl is needed to run the README's command")
    load_demo()
    integration = demo_integration()
    base = live_server.url.replace("localhost", "127.0.0.1")
    script = readme_command().replace(
        "http://127.0.0.1:8000/api/v1/integrations/1/alerts/",
        f"{base}/api/v1/integrations/{integration.pk}/alerts/",
    )
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["alerts"][0]["action"] == "open", answer
    draft = Incident.objects.get(alert_group__integration=integration, is_public=False)
    assert draft.public_id == answer["alerts"][0]["incident"]
    assert not draft.is_public
