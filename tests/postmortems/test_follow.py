"""Follow-through: each action item's history, "won't do" with a reason, and what the
public report and product page show of it."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client, TestCase
from freezegun import freeze_time

from incidents import services
from incidents.models import ActionItem, Incident
from postmortems.follow_models import ActionItemChange
from tests.builders import make_incident, make_product, utc
from tests.public.helpers import publish_report

pytestmark = pytest.mark.django_db

NOW = "2026-12-01 12:00:00"
REASON = "Superseded by the router fleet replacement."


@pytest.fixture
def incident(db: None) -> Incident:
    with freeze_time("2026-11-01 12:00:00"):
        return make_incident(
            product=make_product("Gmail", slug="gmail"), start=utc(2026, 10, 30, 9), end=utc(2026, 10, 30, 10)
        )


def _item(incident: Incident, title: str, **kw: Any) -> ActionItem:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return services.action_item_create(incident=incident, title=title, **kw)


def _history(item: ActionItem) -> list[tuple[str, str, str, str]]:
    return list(
        ActionItemChange.objects.filter(item=item)
        .order_by("id")
        .values_list("field", "old_value", "new_value", "reason")
    )


def test_it_records_each_status_due_date_and_owner_change_with_who_and_when(
    incident: Incident, alice: User
) -> None:
    with freeze_time("2026-11-02 09:00:00"):
        item = _item(incident, "Canary config pushes", due_date=date(2026, 11, 20), actor=alice)
    assert _history(item) == [("status", "", "open", ""), ("due_date", "", "2026-11-20", "")]
    with freeze_time("2026-11-05 09:00:00"):
        services.action_item_edit(
            item=item, changes={"status": "in_progress", "owner": alice, "priority": "P0"}, actor=alice
        )
    with freeze_time("2026-11-06 09:00:00"):
        services.action_item_edit(item=item, changes={"title": "Canary every config push"}, actor=alice)
    with freeze_time("2026-11-07 09:00:00"):
        services.action_item_edit(item=item, changes={"due_date": date(2026, 12, 4)}, actor=alice)
    rows = list(ActionItemChange.objects.filter(item=item).order_by("id"))
    assert [(r.field, r.old_value, r.new_value) for r in rows[2:]] == [
        ("status", "open", "in_progress"),
        ("owner", "", "alice"),
        ("due_date", "2026-11-20", "2026-12-04"),
    ]  # the title and priority are not followed
    assert {r.actor for r in rows} == {alice}
    assert [r.changed_at for r in rows[2:]] == [utc(2026, 11, 5, 9), utc(2026, 11, 5, 9), utc(2026, 11, 7, 9)]


def test_it_refuses_wont_do_without_a_reason_and_changes_nothing(incident: Incident, alice: User) -> None:
    item = _item(incident, "Shard the router", actor=alice)
    before = _history(item)
    for reason in ("", "   "):
        with pytest.raises(ValidationError) as refused:
            services.action_item_edit(item=item, changes={"status": "wont_do"}, actor=alice, reason=reason)
        assert "reason" in refused.value.message_dict
    item.refresh_from_db()
    assert item.status == "open" and _history(item) == before
    with pytest.raises(ValidationError):
        services.action_item_create(incident=incident, title="Dropped at once", status="wont_do", actor=alice)
    assert not ActionItem.objects.filter(title="Dropped at once").exists()

    services.action_item_edit(item=item, changes={"status": "wont_do"}, actor=alice, reason=f"  {REASON} ")
    assert _history(item)[-1] == ("status", "open", "wont_do", REASON)


def test_the_console_shows_a_form_error_for_wont_do_without_a_reason(
    staff_client: Client, incident: Incident, alice: User
) -> None:
    item = _item(incident, "Shard the router", actor=alice)
    url = f"/manage/incidents/{incident.public_id}/report/"
    row = {"item_id": item.pk, "title": item.title, "type": "prevent", "priority": "P2", "status": "wont_do"}
    data = {
        "kind": "full",
        "summary": "Gmail was down.",
        "items-TOTAL_FORMS": "1",
        "items-INITIAL_FORMS": "1",
        "_save": "1",
        **{f"items-0-{k}": v for k, v in row.items()},
    }
    response = staff_client.post(url, data)
    assert response.status_code == 200
    errors = response.context["formset"].forms[0].errors
    assert "reason" in errors and "Say why" in str(errors["reason"])
    item.refresh_from_db()
    assert (
        item.status == "open" and not ActionItemChange.objects.filter(item=item, new_value="wont_do").exists()
    )

    with TestCase.captureOnCommitCallbacks(execute=True):
        response = staff_client.post(url, {**data, "items-0-reason": REASON})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.status == "wont_do"
    assert _history(item)[-1] == ("status", "open", "wont_do", REASON)


@pytest.fixture
def followed(incident: Incident, alice: User) -> dict[str, ActionItem]:
    with freeze_time("2026-11-02 09:00:00"):
        items = {
            "done": _item(
                incident, "Canary config pushes", is_public=True, due_date=date(2026, 11, 20), actor=alice
            ),
            "dropped": _item(incident, "Per-user throttles", is_public=True, actor=alice),
            "overdue": _item(
                incident, "Alert per zone", is_public=True, due_date=date(2026, 11, 25), actor=alice
            ),
            "later": _item(
                incident, "Faster failover", is_public=True, due_date=date(2027, 1, 15), actor=alice
            ),
            "internal": _item(
                incident, "Rotate the on-call pager secret", due_date=date(2026, 11, 3), actor=alice
            ),
        }
    with freeze_time("2026-11-18 10:00:00"):
        services.action_item_edit(item=items["done"], changes={"status": "done"}, actor=alice)
    with freeze_time("2026-11-19 10:00:00"):
        services.action_item_edit(
            item=items["dropped"], changes={"status": "wont_do"}, actor=alice, reason=REASON
        )
        services.action_item_edit(item=items["later"], changes={"due_date": date(2027, 1, 29)}, actor=alice)
    with freeze_time("2026-11-20 10:00:00"), TestCase.captureOnCommitCallbacks(execute=True):
        publish_report(incident)
    return items


def _commitment_rows(html: str) -> str:
    return html.split('id="actions-title"')[1].split("</table>")[0]


def test_the_public_report_shows_status_dates_reasons_history_and_overdue_items(
    client: Client, incident: Incident, followed: dict[str, ActionItem]
) -> None:
    with freeze_time(NOW):
        html = client.get(f"/incidents/{incident.public_id}/").content.decode()
    rows = _commitment_rows(html)
    assert "Completed 18 Nov 2026" in rows
    assert "Dropped 19 Nov 2026" in rows and f"Reason: {REASON}" in rows
    assert "Due date: 15 Jan 2027 → 29 Jan 2027" in rows  # the history
    overdue = rows.split("Alert per zone")[1].split("</tr>")[0]
    assert "Overdue" in overdue and "25 Nov 2026" in overdue
    assert rows.count("pill--overdue") == 1  # the done item was due earlier but is closed
    assert "Rotate the on-call pager secret" not in html  # internal items never appear
    assert "alice" not in rows  # nor owners


def test_an_unpublished_report_shows_no_commitments(client: Client, incident: Incident, alice: User) -> None:
    _item(incident, "Canary config pushes", is_public=True, actor=alice)
    services.report_save(incident=incident, summary="Draft.")
    html = client.get(f"/incidents/{incident.public_id}/").content.decode()
    assert "Canary config pushes" not in html


def test_the_product_page_lists_its_open_public_commitments(
    client: Client, incident: Incident, followed: dict[str, ActionItem]
) -> None:
    with freeze_time(NOW):
        html = client.get("/products/gmail/").content.decode()
    section = html.split('id="commitments-title"')[1].split("</section>")[0]
    assert "Alert per zone" in section and "Faster failover" in section
    assert "pill--overdue" in section.split("Alert per zone")[1].split("</tr>")[0]
    assert incident.title in section
    for closed_or_internal in (
        "Canary config pushes",
        "Per-user throttles",
        "Rotate the on-call pager secret",
    ):
        assert closed_or_internal not in html
    # Most urgent first: the overdue item is listed before the one due in January.
    assert section.index("Alert per zone") < section.index("Faster failover")


def test_the_product_page_has_no_commitments_section_without_any(client: Client, incident: Incident) -> None:
    html = client.get("/products/gmail/").content.decode()
    assert 'id="commitments-title"' not in html


def test_the_admin_asks_for_a_reason_to_drop_an_item(client: Client, incident: Incident, alice: User) -> None:
    item = _item(incident, "Shard the router", actor=alice)
    client.force_login(alice)
    url = f"/admin/incidents/actionitem/{item.pk}/change/"
    data = {"title": item.title, "description": "", "type": "prevent", "priority": "P2", "status": "wont_do"}
    data |= {"owner": "", "due_date": "", "tracker_url": "", "reason": ""}
    refused = client.post(url, data)
    assert refused.status_code == 200 and "Say why" in refused.content.decode()
    item.refresh_from_db()
    assert item.status == "open"
    with TestCase.captureOnCommitCallbacks(execute=True):
        saved = client.post(url, {**data, "reason": REASON})
    assert saved.status_code == 302
    assert _history(item)[-1] == ("status", "open", "wont_do", REASON)
