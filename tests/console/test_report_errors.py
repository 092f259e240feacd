"""The report screen: several action items in one save, and every error shown at once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

TOO_DEEP = "> " * 20 + "quoted too deeply"


@pytest.fixture
def incident(db: None) -> Incident:
    return make_incident(
        product=make_product("Gmail"),
        start=utc(2026, 11, 30, 18),
        end=utc(2026, 11, 30, 19),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
    )


def _url(incident: Incident) -> str:
    return f"/manage/incidents/{incident.public_id}/report/"


def _row(index: int, **fields: Any) -> dict[str, Any]:
    values = {"title": "", "type": "prevent", "priority": "P2", "status": "open", **fields}
    return {f"items-{index}-{name}": value for name, value in values.items()}


def _data(*rows: dict[str, Any], **report: Any) -> dict[str, Any]:
    data = {
        "kind": "full",
        "summary": "Gmail was down for an hour.",
        "root_cause": "",
        "remediation": "",
        "impact_description": "",
        "items-TOTAL_FORMS": str(len(rows)),
        "items-INITIAL_FORMS": "0",
        "_save": "1",
        **report,
    }
    for row in rows:
        data.update(row)
    return data


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


def test_it_offers_three_empty_rows_and_saves_several_items_at_once(
    staff_client: Client, alice: User, incident: Incident
) -> None:
    form = staff_client.get(_url(incident)).context["formset"]
    assert len(form.forms) == 3 and form.initial_form_count() == 0
    data = _data(
        _row(0, title="Canary config pushes", priority="P1", owner=alice.pk),
        _row(1, title="Alert on login errors", type="detect"),
        _row(2, title="Write the runbook", type="process", is_public="on"),
    )
    response = post(staff_client, _url(incident), data)
    assert response.status_code == 302
    assert list(
        ActionItem.objects.order_by("title").values_list("title", "type", "priority", "is_public")
    ) == [
        ("Alert on login errors", "detect", "P2", False),
        ("Canary config pushes", "prevent", "P1", False),
        ("Write the runbook", "process", "P2", True),
    ]
    # After the save: the three items, and three new empty rows.
    formset = staff_client.get(_url(incident)).context["formset"]
    assert (formset.initial_form_count(), len(formset.forms)) == (3, 6)


def test_it_shows_every_error_at_once_and_saves_nothing(staff_client: Client, incident: Incident) -> None:
    data = _data(
        _row(0, title="Canary config pushes", tracker_url="not a link"),  # the form's own check
        _row(1, title="Alert on\u0007 login errors"),  # the service's rule
        _row(2, title="", priority="P0"),  # a new row with a priority but no title
        _row(3, title="A fine item"),
        summary=TOO_DEEP,
        root_cause=TOO_DEEP,
    )
    data["items-TOTAL_FORMS"] = "4"
    response = post(staff_client, _url(incident), data)
    assert response.status_code == 200
    assert not IncidentReport.objects.exists() and not ActionItem.objects.exists()
    html = response.content.decode()
    summary = html[
        html.index('<div class="error-summary"') : html.index(
            "</div>", html.index('<div class="error-summary"')
        )
    ]
    assert "Nothing was saved: 5 problems to fix" in summary
    links = re.findall(r'<li><a href="#([^"]+)">([^<]+)</a></li>', summary)
    assert [href for href, _ in links] == [
        "id_summary",
        "id_root_cause",
        "id_items-0-tracker_url",
        "id_items-1-title",
        "id_items-2-title",
    ]
    texts = [text for _, text in links]
    assert texts[0].startswith("Summary: ") and "nested" in texts[0]
    assert texts[2] == "Action item 1 (new), Tracker link: Enter a valid URL."
    assert texts[3] == "Action item 2 (new), Title: Line breaks and control characters are not allowed."
    assert texts[4].startswith("Action item 3 (new), Title: Give the new action item a title")
    # Each error is also beside its field, and each linked id exists on the page.
    for href, _ in links:
        assert f'id="{href}"' in html
    assert html.count('class="field__error"') == 5
    # What was typed is kept for the next try.
    assert "A fine item" in html and "Canary config pushes" in html


def test_it_names_a_refused_existing_row_and_keeps_the_others_unsaved(
    staff_client: Client, incident: Incident
) -> None:
    existing = ActionItem.objects.create(incident=incident, title="Old item")
    data = _data(
        {**_row(0, title="", item_id=existing.pk)},  # an existing item cannot lose its title
        _row(1, title="New item"),
    )
    data["items-INITIAL_FORMS"] = "1"
    response = post(staff_client, _url(incident), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Nothing was saved: 1 problem to fix" in html
    assert '<a href="#id_items-0-title">Action item 1, Title: This field is required.</a>' in html
    assert list(ActionItem.objects.values_list("title", flat=True)) == ["Old item"]
    assert not IncidentReport.objects.exists()


def test_it_says_the_report_was_saved_when_only_publishing_was_refused(
    staff_client: Client, incident: Incident
) -> None:
    data = _data(summary="")
    del data["_save"]
    data["_publish"] = "1"
    response = post(staff_client, _url(incident), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "The report was saved but not published: 1 problem to fix" in html
    assert '<a href="#id_summary">Summary: A published report needs a summary.</a>' in html
    assert IncidentReport.objects.get().status == IncidentReport.Status.DRAFT


def test_a_page_without_errors_has_no_summary(staff_client: Client, incident: Incident) -> None:
    assert "error-summary" not in staff_client.get(_url(incident)).content.decode()
