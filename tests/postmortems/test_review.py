"""Review before publishing: the transitions, the log, revisions, and the gate on every
door (service, console, admin, API, command). docs/adr/0021-report-review.md."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from core.errors import NotApproved
from incidents import services
from incidents.models import Incident, IncidentReport
from postmortems import review
from postmortems.models import ReportRevision, ReviewEvent, ReviewRequest
from tests.api.keys import key_for
from tests.builders import make_incident, make_product, utc
from tests.incidents.test_admin import form_data

pytestmark = pytest.mark.django_db
T0 = utc(2026, 10, 8, 11, 0)


def _person(name: str, role: str) -> User:
    user = User.objects.create_user(name, f"{name}@example.org", f"{name}-password", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def author() -> User:
    return _person("rita", "Responder")


@pytest.fixture
def approver() -> User:
    return _person("april", "Report approver")


@pytest.fixture
def incident(author: User) -> Incident:
    incident = make_incident(product=make_product("Cloud Storage"), start=T0, end=T0 + timedelta(hours=5))
    services.report_save(incident=incident, summary="Writes failed.", root_cause="A quota.", actor=author)
    return incident


def _status(incident: Incident) -> str:
    return IncidentReport.objects.get(incident=incident).status


def _log(incident: Incident) -> list[tuple[str, str, str]]:
    return [
        (e.kind, e.status, e.actor.username if e.actor else "")
        for e in ReviewEvent.objects.filter(report__incident=incident).order_by("pk")
    ]


def test_it_takes_a_report_through_review_and_keeps_every_step(
    incident: Incident, author: User, approver: User
) -> None:
    review.review_request(incident=incident, reviewers=[approver], actor=author)
    review.review_comment(incident=incident, body="Name the quota.", anchor="root_cause", actor=approver)
    review.review_request_changes(incident=incident, comment="Say which quota.", actor=approver)
    assert _status(incident) == "draft"
    services.report_save(
        incident=incident, summary="Writes failed.", root_cause="The metadata quota.", actor=author
    )
    review.review_request(incident=incident, reviewers=[approver], actor=author)
    review.review_approve(incident=incident, comment="Clear now.", actor=approver)
    report = services.report_publish(incident=incident, actor=approver)

    assert report.status == "published" and report.author == author
    assert report.approved_by == approver and report.approved_at is not None
    assert _log(incident) == [
        ("transition", "in_review", "rita"),
        ("comment", "", "april"),
        ("comment", "", "april"),
        ("transition", "draft", "april"),
        ("transition", "in_review", "rita"),
        ("transition", "approved", "april"),
        ("comment", "", "april"),
        ("transition", "published", "april"),
    ]
    assert ReviewEvent.objects.filter(anchor="root_cause").get().body_html == "<p>Name the quota.</p>"
    assert ReviewRequest.objects.get().reviewer == approver
    assert ReportRevision.objects.get().summary_html == "<p>Writes failed.</p>"


def test_it_refuses_to_publish_a_report_that_is_not_approved(
    incident: Incident, author: User, approver: User
) -> None:
    with pytest.raises(NotApproved, match="draft"):
        services.report_publish(incident=incident, actor=approver)
    review.review_request(incident=incident, reviewers=[approver], actor=author)
    with pytest.raises(NotApproved, match="in review"):
        services.report_publish(incident=incident, actor=approver)
    with pytest.raises(NotApproved):
        services.report_publish(incident=incident)  # not even the system
    assert _status(incident) == "in_review"
    assert Incident.objects.get(pk=incident.pk).status == Incident.Status.RESOLVED


def test_the_author_neither_approves_nor_publishes(incident: Incident, approver: User) -> None:
    # An Administrator who wrote the report is still its author.
    admin = _person("ada", "Administrator")
    services.report_save(incident=incident, summary="Rewritten.", actor=admin)  # author stays rita
    writer_approver = _person("wanda", "Administrator")
    other = make_incident(title="Other", product=make_product("Drive"), start=T0, end=T0 + timedelta(hours=1))
    services.report_save(incident=other, summary="Drive failed.", actor=writer_approver)
    review.review_request(incident=other, reviewers=[approver], actor=writer_approver)
    with pytest.raises(PermissionDenied, match="author"):
        review.review_approve(incident=other, actor=writer_approver)
    review.review_approve(incident=other, actor=approver)
    with pytest.raises(PermissionDenied, match="author"):
        services.report_publish(incident=other, actor=writer_approver)
    assert _status(other) == "approved"
    services.report_publish(incident=other, actor=admin)
    assert _status(other) == "published"


def test_editing_an_approved_report_sends_it_back_to_review(
    incident: Incident, author: User, approver: User
) -> None:
    review.review_request(incident=incident, reviewers=[approver], actor=author)
    review.review_approve(incident=incident, actor=approver)
    services.report_save(incident=incident, summary="Writes failed.", root_cause="A quota.", actor=author)
    assert _status(incident) == "approved"  # the same text keeps its approval

    services.report_save(
        incident=incident, summary="Writes failed for 12 hours.", root_cause="A quota.", actor=author
    )

    report = IncidentReport.objects.get(incident=incident)
    assert report.status == "in_review" and report.approved_by is None
    assert _log(incident)[-1] == ("transition", "in_review", "rita")
    with pytest.raises(NotApproved):
        services.report_publish(incident=incident, actor=approver)


def test_a_revision_of_a_published_report_keeps_the_earlier_text(
    incident: Incident, author: User, approver: User
) -> None:
    review.review_request(incident=incident, reviewers=[approver], actor=author)
    review.review_approve(incident=incident, actor=approver)
    services.report_publish(incident=incident, published_at=T0 + timedelta(days=2), actor=approver)

    services.report_save(incident=incident, summary="Writes failed; corrected.", actor=author)

    report = IncidentReport.objects.get(incident=incident)
    assert report.is_published and report.revised_at is not None
    revisions = list(ReportRevision.objects.filter(report=report).order_by("number"))
    assert [r.summary_html for r in revisions] == [
        "<p>Writes failed.</p>",
        "<p>Writes failed; corrected.</p>",
    ]
    assert revisions[0].published_at == T0 + timedelta(days=2)
    assert _log(incident)[-1] == ("revision", "", "rita")


def test_it_refuses_bad_review_requests_and_comments(
    incident: Incident, author: User, approver: User
) -> None:
    with pytest.raises(ValidationError, match="Report approver"):
        review.review_request(incident=incident, reviewers=[_person("vic", "Viewer")], actor=author)
    with pytest.raises(ValidationError, match="at least one"):
        review.review_request(incident=incident, reviewers=[], actor=author)
    with pytest.raises(ValidationError, match="section"):
        review.review_comment(incident=incident, body="Hm.", anchor="nowhere", actor=approver)
    review.review_comment(incident=incident, body="See this entry.", anchor="timeline:12", actor=approver)
    with pytest.raises(ValidationError, match="in review"):
        review.review_request_changes(incident=incident, comment="x", actor=approver)
    with pytest.raises(PermissionDenied):
        review.review_approve(incident=incident, actor=author)  # a Responder may not approve
    assert _status(incident) == "draft"
    assert [e.anchor for e in ReviewEvent.objects.all()] == ["timeline:12"]


# --- The gate on every door ---------------------------------------------------------------------


def _in_review(incident: Incident, author: User, approver: User) -> None:
    review.review_request(incident=incident, reviewers=[approver], actor=author)


def test_the_console_does_not_publish_an_unapproved_report(
    incident: Incident, author: User, approver: User
) -> None:
    _in_review(incident, author, approver)
    client = Client()
    client.force_login(approver)
    url = f"/manage/incidents/{incident.public_id}/report/review/"
    page = client.get(url).content.decode()
    assert 'name="_approve"' in page and 'name="_publish"' not in page

    response = client.post(url, {"_publish": "1"}, follow=True)
    assert "approve it before it is published" in response.content.decode()
    response = client.post(f"/manage/incidents/{incident.public_id}/report/", {"_publish": "1"})
    assert response.status_code == 302
    assert _status(incident) == "in_review"

    client.post(url, {"_approve": "1", "verdict-comment": "Good."})
    assert _status(incident) == "approved"
    assert client.post(url, {"_publish": "1"}).status_code == 302
    assert _status(incident) == "published"


def test_the_admin_does_not_publish_an_unapproved_report(incident: Incident) -> None:
    admin = User.objects.create_user("root", "root@example.org", "x", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    change = f"/admin/incidents/incident/{incident.pk}/change/"
    data = {**form_data(client.get(change), "incident_form"), "report-0-status": "published"}
    response = client.post(change, data)
    assert response.status_code == 200  # the form is shown again with the refusal
    assert "published is not one of the available choices" in response.content.decode()
    data["report-0-status"] = "approved"
    assert client.post(change, data).status_code == 200
    assert _status(incident) == "draft"


def test_the_api_answers_409_to_publishing_an_unapproved_report(
    incident: Incident, author: User, approver: User
) -> None:
    api = Client(HTTP_AUTHORIZATION=f"Token {key_for(approver)}")
    writer = Client(HTTP_AUTHORIZATION=f"Token {key_for(author)}")
    base = f"/api/v1/incidents/{incident.public_id}/report"

    refused = api.post(f"{base}/publish/", {}, content_type="application/json")
    assert refused.status_code == 409
    assert refused["Content-Type"] == "application/problem+json"
    assert refused.json()["code"] == "not_approved"
    assert _status(incident) == "draft"

    asked = writer.post(f"{base}/review/request/", {"reviewers": ["april"]}, content_type="application/json")
    assert asked.status_code == 200, asked.content
    assert asked.json()["status"] == "in_review" and asked.json()["reviewers"] == ["april"]
    said = api.post(
        f"{base}/review/comments/", {"body": "Fine.", "anchor": "summary"}, content_type="application/json"
    )
    assert said.status_code == 201
    assert api.post(f"{base}/publish/", {}, content_type="application/json").status_code == 409
    assert writer.post(f"{base}/review/approve/", {}, content_type="application/json").status_code == 403
    approved = api.post(f"{base}/review/approve/", {}, content_type="application/json")
    assert approved.json()["status"] == "approved"
    assert api.post(f"{base}/publish/", {}, content_type="application/json").status_code == 200
    log = json.loads(api.get(f"{base}/review/").content)["log"]
    assert [(e["kind"], e["status"]) for e in log] == [
        ("transition", "in_review"),
        ("comment", ""),
        ("transition", "approved"),
        ("transition", "published"),
    ]
    assert Client().get(f"{base}/review/").status_code == 404  # staff only


def test_the_command_refuses_an_unapproved_report(
    incident: Incident, author: User, approver: User, capsys: Any
) -> None:
    with pytest.raises(CommandError, match="approve it before it is published"):
        call_command("publish_report", incident.public_id, "--as", "april")
    _in_review(incident, author, approver)
    review.review_approve(incident=incident, actor=approver)
    with pytest.raises(CommandError, match="does not allow"):
        call_command("publish_report", incident.public_id, "--as", "rita")  # a Responder
    assert _status(incident) == "approved"

    call_command("publish_report", incident.public_id, "--as", "april")

    assert _status(incident) == "published"
    assert "Published the report" in capsys.readouterr().out
