"""The console update adds several products in one post, each in its own location and at
its own level, with errors shown on the row they belong to (issue 28)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from console.update_forms import ADDED_ROWS
from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_group, make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level


def post(client: Client, url: str, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url, data)


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    cloud = make_group("Cloud")
    storage = make_product("Cloud Storage", group=cloud, position=1)
    incident = services.incident_open(
        title="Storage errors",
        impact=Incident.Impact.MINOR,
        started_at=utc(2026, 11, 30, 18, 0),
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=storage, level=Level.DEGRADED_PERFORMANCE, started_at=utc(2026, 11, 30, 18)
            )
        ],
    )
    return {
        "incident": incident,
        "storage": storage,
        "compute": make_product("Compute Engine", group=cloud, position=2),
        "bigquery": make_product("BigQuery", group=cloud, position=3),
        "central": make_location("us-central1"),
        "east": make_location("us-east1"),
        "url": f"/manage/incidents/{incident.public_id}/update/",
    }


def _data(world: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "public",
        "status": "identified",
        "body": "More products are affected.",
        "display_at": "2026-11-30T10:20",  # US/Pacific: 18:20 UTC
        f"level_{world['storage'].pk}_0": Level.DEGRADED_PERFORMANCE,
        "impact": "",
        "notify": "on",
        "_post": "1",
        **extra,
    }


def test_it_offers_blank_rows_that_need_no_javascript(staff_client: Client, world: dict[str, Any]) -> None:
    page = staff_client.get(world["url"]).content.decode()
    for number in range(1, ADDED_ROWS + 1):
        assert f'name="add_product_{number}"' in page
        assert f'name="add_location_{number}"' in page
        assert f'name="add_level_{number}"' in page
        assert f"Added product {number}</legend>" in page


def test_it_adds_several_products_each_with_its_own_location_and_level(
    staff_client: Client, alice: User, world: dict[str, Any]
) -> None:
    incident: Incident = world["incident"]
    response = post(
        staff_client,
        world["url"],
        _data(
            world,
            add_product_1=world["compute"].pk,
            add_location_1=world["central"].pk,
            add_level_1=Level.MAJOR_OUTAGE,
            add_product_2=world["compute"].pk,
            add_location_2=world["east"].pk,
            add_level_2=Level.DEGRADED_PERFORMANCE,
            add_product_3=world["bigquery"].pk,
            add_location_3="",
            add_level_3=Level.PARTIAL_OUTAGE,
        ),
    )
    assert response.status_code == 302, response.content.decode()
    added = {
        (w.product.name, w.location.name if w.location else None): (w.level, w.started_at, w.ended_at)
        for w in incident.windows.exclude(product=world["storage"]).select_related("product", "location")
    }
    at = utc(2026, 11, 30, 18, 20)
    assert added == {
        ("Compute Engine", "us-central1"): (Level.MAJOR_OUTAGE, at, None),
        ("Compute Engine", "us-east1"): (Level.DEGRADED_PERFORMANCE, at, None),
        ("BigQuery", None): (Level.PARTIAL_OUTAGE, at, None),
    }
    assert incident.windows.get(product=world["storage"]).ended_at is None  # unchanged level, same window
    assert incident.updates.count() == 2  # one public post for all three
    incident.refresh_from_db()
    assert incident.impact == Incident.Impact.CRITICAL  # "follow the levels": the major outage
    # The next update lists them as rows of their own, in their own location.
    form = staff_client.get(world["url"]).context["form"]
    assert [(t.product.name, t.location.name if t.location else None, t.level) for t, _ in form.targets] == [
        ("Cloud Storage", None, Level.DEGRADED_PERFORMANCE),
        ("Compute Engine", "us-central1", Level.MAJOR_OUTAGE),
        ("Compute Engine", "us-east1", Level.DEGRADED_PERFORMANCE),
        ("BigQuery", None, Level.PARTIAL_OUTAGE),
    ]


def test_it_puts_each_error_on_its_row_and_changes_nothing(
    staff_client: Client, world: dict[str, Any]
) -> None:
    incident: Incident = world["incident"]
    response = post(
        staff_client,
        world["url"],
        _data(
            world,
            # Row 1 is fine; row 2 repeats row 1; row 3 names a location but no product.
            add_product_1=world["compute"].pk,
            add_location_1=world["central"].pk,
            add_level_1=Level.MAJOR_OUTAGE,
            add_product_2=world["compute"].pk,
            add_location_2=world["central"].pk,
            add_level_2=Level.PARTIAL_OUTAGE,
            add_location_3=world["east"].pk,
        ),
    )
    assert response.status_code == 200
    form = response.context["form"]
    rows = {row.number: row for row in form.added_rows}
    assert not rows[1].errors
    assert rows[2].product.errors == ["Compute Engine (us-central1) is already listed; set its level there."]
    assert rows[3].product.errors == ["Choose the product affected in this location."]
    page = response.content.decode()
    assert page.count('class="item item--error"') == 2
    assert incident.windows.count() == 1 and incident.updates.count() == 1


def test_it_refuses_a_row_that_repeats_a_product_listed_above(
    staff_client: Client, world: dict[str, Any]
) -> None:
    response = post(
        staff_client,
        world["url"],
        _data(world, add_product_2=world["storage"].pk, add_level_2=Level.MAJOR_OUTAGE),
    )
    assert response.status_code == 200
    row = response.context["form"].added_rows[1]
    assert row.product.errors == ["Cloud Storage (all locations) is already listed; set its level there."]
    assert world["incident"].windows.count() == 1
