"""Internal-only level changes from the console update screen: levels move, nothing is
posted publicly, nobody is notified, and the staff note is listed for staff only (issue 28)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from incidents import services
from incidents.models import ImpactWindow, Incident, IncidentNote
from subscriptions.models import NotificationEvent
from tests.builders import make_group, make_location, make_product, utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOTE = "Failover to us-east1 <b>done</b>; customers see nothing new."


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    cloud = make_group("Cloud")
    storage = make_product("Cloud Storage", group=cloud, position=1)
    make_subscriber()
    incident = services.incident_open(
        title="Storage errors",
        impact=Incident.Impact.MAJOR,
        started_at=utc(2026, 11, 30, 18, 0),
        body="Investigating.",
        windows=[
            services.WindowSpec(product=storage, level=Level.PARTIAL_OUTAGE, started_at=utc(2026, 11, 30, 18))
        ],
    )
    return {
        "incident": incident,
        "storage": storage,
        "compute": make_product("Compute Engine", group=cloud, position=2),
        "central": make_location("us-central1"),
        "url": f"/manage/incidents/{incident.public_id}/update/",
    }


def _internal(world: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "internal",
        "status": "investigating",
        "body": "",
        "note": NOTE,
        "display_at": "2026-11-30T10:40",  # US/Pacific: 18:40 UTC
        f"level_{world['storage'].pk}_0": Level.DEGRADED_PERFORMANCE,
        "impact": "",
        "notify": "on",  # ignored by an internal change: nobody is notified
        "_post": "1",
        **extra,
    }


def test_it_offers_the_internal_choice_on_updates_but_not_when_resolving(
    staff_client: Client, world: dict[str, Any]
) -> None:
    page = staff_client.get(world["url"]).content.decode()
    assert "Internal level change (no public post, nobody notified)" in page
    assert 'name="note"' in page
    resolve = staff_client.get(world["url"] + "?resolve=1").content.decode()
    assert "Internal level change" not in resolve and 'name="note"' not in resolve


def test_it_moves_levels_without_a_public_post_or_a_notification(
    staff_client: Client, alice: User, world: dict[str, Any]
) -> None:
    incident: Incident = world["incident"]
    events = NotificationEvent.objects.count()
    response = post(
        staff_client,
        world["url"],
        _internal(
            world,
            add_product_1=world["compute"].pk,
            add_location_1=world["central"].pk,
            add_level_1=Level.DEGRADED_PERFORMANCE,
        ),
    )
    assert response.status_code == 302, response.content.decode()
    at = utc(2026, 11, 30, 18, 40)
    windows = [
        (w.product.name, w.level, w.started_at, w.ended_at)
        for w in incident.windows.select_related("product").order_by("started_at", "product__position")
    ]
    assert windows == [
        ("Cloud Storage", Level.PARTIAL_OUTAGE, utc(2026, 11, 30, 18), at),
        ("Cloud Storage", Level.DEGRADED_PERFORMANCE, at, None),
        ("Compute Engine", Level.DEGRADED_PERFORMANCE, at, None),
    ]
    assert incident.updates.count() == 1  # only the opening entry
    assert NotificationEvent.objects.count() == events
    note = IncidentNote.objects.get(incident=incident)
    assert (note.body, note.at, note.author) == (NOTE, at, alice)
    incident.refresh_from_db()
    assert incident.status == "investigating"
    assert incident.impact == Incident.Impact.MAJOR  # the worst it reached stays

    console = staff_client.get(f"/manage/incidents/{incident.public_id}/").content.decode()
    assert "Staff notes" in console
    assert "Failover to us-east1 &lt;b&gt;done&lt;/b&gt;; customers see nothing new." in console  # plain text
    public = Client().get(f"/incidents/{incident.public_id}/").content.decode()
    assert "Failover" not in public


def test_a_public_update_does_notify(staff_client: Client, world: dict[str, Any]) -> None:
    """The control for the test above: the same change posted publicly does notify."""
    events = NotificationEvent.objects.count()
    data = _internal(world, kind="public", body="Partly recovered.", note="")
    assert post(staff_client, world["url"], data).status_code == 302
    assert NotificationEvent.objects.count() == events + 1
    assert world["incident"].updates.count() == 2


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"status": "identified"}, "status", "An internal level change keeps the status (Investigating)"),
        ({"body": "Hello world."}, "body", "An internal level change posts no public message"),
    ],
)
def test_it_refuses_what_an_internal_change_cannot_do(
    staff_client: Client, world: dict[str, Any], extra: dict[str, str], field: str, message: str
) -> None:
    incident: Incident = world["incident"]
    response = post(staff_client, world["url"], _internal(world, **extra))
    assert response.status_code == 200
    assert message in response.context["form"].errors[field][0]
    assert incident.windows.count() == 1 and incident.updates.count() == 1
    assert not IncidentNote.objects.exists()


def test_it_refuses_an_internal_change_that_records_nothing(
    staff_client: Client, world: dict[str, Any]
) -> None:
    data = _internal(world, note="", **{f"level_{world['storage'].pk}_0": Level.PARTIAL_OUTAGE})
    response = post(staff_client, world["url"], data)
    assert response.status_code == 200
    assert "No level changed; choose a new level or write a note." in response.content.decode()
    assert world["incident"].windows.count() == 1 and not IncidentNote.objects.exists()


def test_a_public_update_still_needs_its_message(staff_client: Client, world: dict[str, Any]) -> None:
    response = post(staff_client, world["url"], _internal(world, kind="public", note=""))
    assert response.status_code == 200
    assert response.context["form"].errors["body"] == [
        "Write the public message, or choose an internal level change."
    ]
    assert world["incident"].windows.count() == 1


@pytest.mark.parametrize("kind", ["public", "internal"])
def test_a_time_before_the_start_is_refused_in_the_display_zone(
    staff_client: Client, world: dict[str, Any], kind: str
) -> None:
    """Both kinds of update name the start as staff typed it (US/Pacific), never in UTC."""
    body = "Backdated." if kind == "public" else ""
    data = _internal(world, kind=kind, body=body, display_at="2026-11-30T09:30")  # 17:30 UTC
    response = post(staff_client, world["url"], data)
    assert response.status_code == 200
    [error] = response.context["form"].errors["display_at"]
    assert "2026-11-30 10:00 PST" in error and "UTC" not in error
    assert world["incident"].windows.count() == 1 and world["incident"].updates.count() == 1
    assert not IncidentNote.objects.exists()
