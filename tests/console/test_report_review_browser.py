"""Issue 32's review acceptance point in real Chromium: the demo's Cloud Storage incident
report goes draft -> in review (with one comment) -> approved -> published through the
console, by two people: the responder who wrote it and the report approver. The review
screen is checked at 390 and 1280 px (no sideways scrolling, labels, headings, contrast)
and screenshotted. docs/adr/0021-report-review.md.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from demo import incidents as demo_incidents
from demo.roles import password
from incidents.models import Incident, IncidentReport
from postmortems.models import ReviewEvent
from tests.console.test_browser import WIDTHS, browser, check_console_page  # noqa: F401 - fixture

pytestmark = [pytest.mark.browser, pytest.mark.services]


@pytest.fixture
def gcs(transactional_db: None) -> Incident:
    # The demo, with its reports written but left as drafts for this test to review.
    demo_incidents.load(stdout=io.StringIO(), reviewed=False)
    return Incident.objects.get(title=demo_incidents.GCS_TITLE)


def _sign_in(browser: Any, live_server: Any, username: str, *, viewport: str) -> tuple[Any, Any]:  # noqa: F811
    context = browser.new_context(viewport=WIDTHS[viewport])
    page = context.new_page()
    page.goto(f"{live_server.url}/admin/login/?next=/manage/")
    page.fill("#id_username", username)
    page.fill("#id_password", password(username))
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/manage/")
    return context, page


def _status(incident: Incident) -> str:
    return IncidentReport.objects.get(incident=incident).status


def test_the_cloud_storage_report_is_reviewed_approved_and_published(
    browser: Any,  # noqa: F811
    live_server: Any,
    gcs: Incident,
) -> None:
    review_url = f"{live_server.url}/manage/incidents/{gcs.public_id}/report/review/"
    assert _status(gcs) == "draft"

    # The author, on a phone: the report screen leads to the review, which asks the approver.
    context, page = _sign_in(browser, live_server, "responder", viewport="phone")
    page.goto(f"{live_server.url}/manage/incidents/{gcs.public_id}/report/")
    page.click("text=Review and publish")
    page.wait_for_url(review_url)
    assert page.locator("button[name=_publish]").count() == 0
    check_console_page(page, name="report-review-draft", viewport="phone")
    page.check("label:has-text('approver') input[name=reviewers]")
    page.click("button[name=_request]")
    page.wait_for_selector("text=Asked for review")
    assert _status(gcs) == "in_review"
    assert page.locator("button[name=_approve]").count() == 0  # the author does not approve
    context.close()

    # The approver, at a desk: one comment on a section, approval, publication.
    context, page = _sign_in(browser, live_server, "approver", viewport="desktop")
    page.goto(review_url)
    assert page.locator("button[name=_publish]").count() == 0  # not before approval
    page.select_option("#id_comment-anchor", "root_cause")
    page.fill("#id_comment-body", "Say that the 9 October recurrence came from the same metadata tier.")
    page.click("button[name=_comment]")
    page.wait_for_selector("text=Comment added.")
    check_console_page(page, name="report-review-in-review", viewport="desktop")
    page.click("button[name=_approve]")
    page.wait_for_selector("text=Approved the report")
    assert _status(gcs) == "approved"
    page.click("button[name=_publish]")
    page.wait_for_selector("text=Published the incident report")
    # The incident's page (the browser keeps the review page's #log fragment).
    assert page.url.split("#")[0] == f"{live_server.url}/manage/incidents/{gcs.public_id}/"
    context.close()

    report = IncidentReport.objects.select_related("author", "approved_by").get(incident=gcs)
    assert report.status == "published" and report.published_at is not None
    assert report.author is not None and report.approved_by is not None
    assert (report.author.username, report.approved_by.username) == ("responder", "approver")
    log = list(ReviewEvent.objects.filter(report=report).order_by("pk"))
    assert [(e.kind, e.status, e.actor.username if e.actor else "") for e in log] == [
        ("transition", "in_review", "responder"),
        ("comment", "", "approver"),
        ("transition", "approved", "approver"),
        ("transition", "published", "approver"),
    ]
    assert log[1].anchor == "root_cause"
    gcs.refresh_from_db()
    assert gcs.status == Incident.Status.POSTMORTEM

    # The public page now shows the report.
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/incidents/{gcs.public_id}/")
    assert page.locator("#report-title").count() == 1
    context.close()
