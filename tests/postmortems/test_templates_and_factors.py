"""Report templates (seeded, edited on /manage/report-templates/, chosen when a report is
started) and the contributing factors and reflections screen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from incidents.models import Incident, IncidentReport
from postmortems.models import ContributingFactor, Reflection, ReportTemplate
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db
T0 = utc(2026, 10, 8, 11, 0)


def _client(role: str) -> Client:
    user = User.objects.create_user(role.lower().replace(" ", "-"), is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def incident() -> Incident:
    return make_incident(product=make_product("Drive"), start=T0, end=T0 + timedelta(hours=2))


def _report_post(**extra: str) -> dict[str, str]:
    return {
        "kind": "full",
        "summary": "Drive uploads failed.",
        "root_cause": "",
        "remediation": "",
        "impact_description": "",
        "items-TOTAL_FORMS": "0",
        "items-INITIAL_FORMS": "0",
        "_save": "1",
        **extra,
    }


def test_the_migration_seeds_the_four_sections_default_and_a_fuller_template() -> None:
    default, fuller = ReportTemplate.objects.order_by("-is_default", "name")
    assert default.is_default and default.summary and not default.went_well
    assert not fuller.is_default and fuller.went_well and fuller.got_lucky


def test_a_new_report_starts_from_the_chosen_template_and_keeps_its_reflections(incident: Incident) -> None:
    client = _client("Responder")
    fuller = ReportTemplate.objects.get(is_default=False)
    url = f"/manage/incidents/{incident.public_id}/report/"
    page = client.get(url).content.decode()
    assert "[What failed, why it failed, and why it spread.]" in page  # the default's root cause
    page = client.get(f"{url}?report_template={fuller.pk}").content.decode()
    assert "[Each contributing factor" in page

    assert client.post(url, _report_post(report_template=str(fuller.pk))).status_code == 302

    reflections = {r.section: r for r in Reflection.objects.filter(report__incident=incident)}
    assert set(reflections) == {"went_well", "went_wrong", "got_lucky"}
    assert not any(r.is_public for r in reflections.values())  # internal by default


def test_organisations_edit_their_report_templates(incident: Incident) -> None:
    client = _client("Responder")
    default = ReportTemplate.objects.get(is_default=True)
    data = {
        "name": "Customer-facing report",
        "description": "Ours.",
        "is_default": "on",
        "summary": "On [date], we ...",
        "impact_description": "",
        "root_cause": "",
        "remediation": "",
        "went_well": "",
        "went_wrong": "",
        "got_lucky": "",
    }
    created_answer = client.post("/manage/report-templates/new/", data)
    assert created_answer.status_code == 302
    created = ReportTemplate.objects.get(name="Customer-facing report")
    assert created.is_default
    default.refresh_from_db()
    assert not default.is_default  # one default
    listing = client.get("/manage/report-templates/").content.decode()
    assert "Customer-facing report" in listing

    data["name"] = ""
    response = client.post(f"/manage/report-templates/{created.pk}/", data)
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert ReportTemplate.objects.filter(name="Customer-facing report").exists()
    assert _client("Viewer").get("/manage/report-templates/new/").status_code == 403


def test_it_saves_contributing_factors_and_reflections(incident: Incident) -> None:
    client = _client("Responder")
    client.post(f"/manage/incidents/{incident.public_id}/report/", _report_post())
    url = f"/manage/incidents/{incident.public_id}/report/factors/"
    data = {
        "factors-TOTAL_FORMS": "2",
        "factors-INITIAL_FORMS": "0",
        "factors-0-kind": "change",
        "factors-0-description": "A certificate rotation.",
        "factors-0-is_public": "on",
        "factors-1-kind": "detection_gap",
        "factors-1-description": "",
        "went_well": "Rollback took minutes.",
        "went_wrong": "",
        "got_lucky": "It was a Sunday.",
    }
    refused = client.post(url, data)
    assert refused.status_code == 200 and "describe the factor" in refused.content.decode()
    assert not ContributingFactor.objects.exists()

    data["factors-1-description"] = "No alert on certificate chains."
    assert client.post(url, data).status_code == 302

    report = IncidentReport.objects.get(incident=incident)
    assert [(f.kind, f.is_public) for f in ContributingFactor.objects.filter(report=report)] == [
        ("change", True),
        ("detection_gap", False),
    ]
    lucky = Reflection.objects.get(report=report, section="got_lucky")
    assert lucky.body_html == "<p>It was a Sunday.</p>" and not lucky.is_public
    assert _client("Viewer").post(url, data).status_code == 403
