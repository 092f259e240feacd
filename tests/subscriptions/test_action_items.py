"""Action-item follow-up: the owners' daily reminder and the staff page."""

from __future__ import annotations

from datetime import date

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents.models import ActionItem
from outbox.models import OutboundMessage
from subscriptions import tasks
from subscriptions.action_items import action_item_reminders_send
from tests.builders import approve_report, make_incident, make_product, utc

pytestmark = pytest.mark.django_db

# 2026-02-10 16:00 UTC is 08:00 on 2026-02-10 in US/Pacific.
NOW = utc(2026, 2, 10, 16, 0)


@pytest.fixture
def items(alice: User, bob: User) -> dict[str, ActionItem]:
    incident = make_incident(
        title="Gmail spam checking overload",
        product=make_product("Gmail"),
        start=utc(2026, 1, 24, 13, 2),
        end=utc(2026, 1, 24, 17, 55),
    )

    def item(title: str, due: date | None, owner: User | None = alice, priority: str = "P2") -> ActionItem:
        return services.action_item_create(
            incident=incident, title=title, owner=owner, due_date=due, priority=priority
        )

    made = {
        "overdue": item("Cap retries in the spam checker", date(2026, 2, 1), priority="P0"),
        "today": item("Add load shedding to the classifier", date(2026, 2, 10), owner=bob),
        "soon": item("Alert on spam-check failure rate", date(2026, 2, 13)),
        "later": item("Write a runbook for backend overload", date(2026, 3, 1)),
        "undated": item("Review retry budgets across the pipeline", None),
        "unowned": item("Audit banner wording", date(2026, 2, 2), owner=None),
        "done": item("Roll back the bad config", date(2026, 1, 25)),
    }
    made["done"].status = ActionItem.Status.DONE
    made["done"].save(update_fields=["status"])
    return made


def test_it_reminds_owners_once_per_item_per_day(items, django_capture_on_commit_callbacks) -> None:
    with freeze_time(NOW):
        with django_capture_on_commit_callbacks(execute=True):
            assert action_item_reminders_send() == 3
        with django_capture_on_commit_callbacks(execute=True):
            assert action_item_reminders_send() == 3  # the beat fired twice
    by_subject = {m.subject: m for m in mail.outbox}
    assert sorted(by_subject) == [
        "[Status] Due in 3 days: Alert on spam-check failure rate",
        "[Status] Due today: Add load shedding to the classifier",
        "[Status] Overdue: Cap retries in the spam checker",
    ]
    assert by_subject["[Status] Due today: Add load shedding to the classifier"].to == ["bob@example.org"]
    overdue = by_subject["[Status] Overdue: Cap retries in the spam checker"]
    assert overdue.to == ["alice@example.org"]
    assert "it was due on 2026-02-01" in overdue.body
    assert "Gmail spam checking overload" in overdue.body
    assert "http://testserver/staff/action-items/" in overdue.body
    assert OutboundMessage.objects.filter(purpose="subscriptions.action_item_reminder").count() == 3

    # The next day, one more each.
    with freeze_time(utc(2026, 2, 11, 16, 0)), django_capture_on_commit_callbacks(execute=True):
        tasks.action_item_reminders.delay()
    assert len(mail.outbox) == 6
    assert OutboundMessage.objects.filter(idempotency_key__endswith=":2026-02-11").count() == 3


def test_it_stops_reminding_when_the_item_is_done(items, django_capture_on_commit_callbacks) -> None:
    for key in ("overdue", "today", "soon"):
        items[key].status = ActionItem.Status.DONE
        items[key].save(update_fields=["status"])
    with freeze_time(NOW), django_capture_on_commit_callbacks(execute=True):
        assert action_item_reminders_send() == 0
    assert mail.outbox == []


def test_the_staff_page_lists_open_items_across_incidents(items, staff_client: Client) -> None:
    with freeze_time(NOW):
        response = staff_client.get("/staff/action-items/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "6 open items" in body
    overdue_section = body.split('id="overdue"')[1].split("</table>")[0]
    assert "Cap retries in the spam checker" in overdue_section
    assert "Audit banner wording" in overdue_section
    assert "<strong>Nobody</strong>" in overdue_section
    soon_section = body.split('id="due-soon"')[1].split("</table>")[0]
    assert "Add load shedding" in soon_section and "Alert on spam-check" in soon_section
    later_section = body.split('id="later"')[1].split("</table>")[0]
    assert "Write a runbook" in later_section and "Review retry budgets" in later_section
    assert "Roll back the bad config" not in body


def test_the_staff_page_refuses_others(items, client: Client, bob: User) -> None:
    response = client.get("/staff/action-items/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(bob)
    response = client.get("/staff/action-items/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_public_items_are_listed_on_the_published_report_only(
    items, client: Client, django_capture_on_commit_callbacks
) -> None:
    incident = items["overdue"].incident
    # Commit callbacks run: they bump the public-state version the page cache keys on.
    with django_capture_on_commit_callbacks(execute=True):
        services.action_item_create(incident=incident, title="Publicly promised fix", is_public=True)
        services.report_save(incident=incident, summary="Retries overloaded the spam checker.")
    path = f"/incidents/{incident.public_id}/"
    assert "Publicly promised fix" not in client.get(path).content.decode()  # report still a draft

    with django_capture_on_commit_callbacks(execute=True):
        approve_report(incident)
        services.report_publish(incident=incident)
    body = client.get(path).content.decode()
    assert "Publicly promised fix" in body
    assert "Cap retries in the spam checker" not in body  # not flagged public
