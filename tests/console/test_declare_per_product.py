"""Declare with locations per product: each affected product gets its own level and its
own locations (none ticked: all locations), with plain form controls."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, TestCase

from incidents.models import ImpactWindow, Incident
from tests.builders import make_group, make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level


def post(client: Client, data: dict[str, Any]) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post("/manage/declare/", data)


@pytest.fixture
def catalogue(db: None) -> dict[str, Any]:
    cloud = make_group("Cloud")
    return {
        "compute": make_product("Compute Engine", group=cloud, position=1),
        "storage": make_product("Cloud Storage", group=cloud, position=2),
        "gmail": make_product("Gmail", group=cloud, position=3),
        "central": make_location("us-central1"),
        "east": make_location("us-east1"),
    }


def _data(**extra: Any) -> dict[str, Any]:
    return {
        "title": "Compute and Storage errors",
        "status": "investigating",
        "started_at": "2026-10-07T15:50",  # US/Pacific: 22:50 UTC
        "body": "We are investigating.",
        "notify": "on",
        "_publish": "1",
        **extra,
    }


def test_it_gives_each_product_its_own_level_and_locations(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    compute, storage = catalogue["compute"], catalogue["storage"]
    central, east = catalogue["central"], catalogue["east"]
    response = post(
        staff_client,
        _data(
            **{
                # Compute Engine: affected everywhere (no location ticked).
                f"level_{compute.pk}_0": Level.MAJOR_OUTAGE,
                # Cloud Storage: only in two regions.
                f"level_{storage.pk}_0": Level.DEGRADED_PERFORMANCE,
                f"locations_{storage.pk}": [central.pk, east.pk],
            }
        ),
    )
    assert response.status_code == 302
    incident = Incident.objects.get()
    windows = {
        (w.product.name, w.location and w.location.name, w.level, w.started_at)
        for w in incident.windows.all()
    }
    start = utc(2026, 10, 7, 22, 50)
    assert windows == {
        ("Compute Engine", None, Level.MAJOR_OUTAGE, start),
        ("Cloud Storage", "us-central1", Level.DEGRADED_PERFORMANCE, start),
        ("Cloud Storage", "us-east1", Level.DEGRADED_PERFORMANCE, start),
    }
    assert incident.impact == Incident.Impact.CRITICAL


def test_it_refuses_locations_without_a_level_and_keeps_what_was_ticked(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    compute, gmail, east = catalogue["compute"], catalogue["gmail"], catalogue["east"]
    response = post(
        staff_client,
        _data(**{f"level_{compute.pk}_0": Level.PARTIAL_OUTAGE, f"locations_{gmail.pk}": [east.pk]}),
    )
    assert response.status_code == 200
    assert not Incident.objects.exists()
    html = response.content.decode()
    assert "Choose the level of Gmail, or untick its locations." in html
    # The ticked box stays ticked, its disclosure open and its summary naming it.
    assert f'value="{east.pk}" id="id_locations_{gmail.pk}_1" checked' in html
    rows = {row.product.name: row for _, group in response.context["form"].groups for row in group}
    assert rows["Gmail"].ticked == ["us-east1"] and rows["Compute Engine"].ticked == []
    assert "Locations: <span data-where-summary>us-east1</span>" in html


def test_it_shows_every_mistake_at_once(staff_client: Client, catalogue: dict[str, Any]) -> None:
    response = post(staff_client, _data(title=""))
    form = response.context["form"]
    assert (
        form.errors["title"]
        and "Choose a level for at least one affected product." in form.non_field_errors()
    )
    assert not Incident.objects.exists()


def test_it_offers_plain_controls_that_work_without_javascript(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    html = staff_client.get("/manage/declare/").content.decode()
    compute, central = catalogue["compute"], catalogue["central"]
    # A native disclosure holding ordinary checkboxes, each inside its label; closed while
    # none is ticked; the script only renames the summary.
    assert '<details class="where" data-where>' in html
    assert "<summary>Locations: <span data-where-summary>all</span></summary>" in html
    assert (
        f'<label for="id_locations_{compute.pk}_0"><input type="checkbox" name="locations_{compute.pk}" '
        f'value="{central.pk}" id="id_locations_{compute.pk}_0">' in html
    )
    assert '<script src="/static/js/declare.js" defer></script>' in html


def test_it_records_the_detection_time_and_refuses_one_before_the_start(
    staff_client: Client, catalogue: dict[str, Any]
) -> None:
    compute = catalogue["compute"]
    level = {f"level_{compute.pk}_0": Level.MAJOR_OUTAGE}
    early = post(staff_client, _data(detected_at="2026-10-07T15:40", **level))  # before the start
    assert early.status_code == 200
    assert "precede" in " ".join(early.context["form"].errors["detected_at"])
    assert not Incident.objects.exists()
    response = post(staff_client, _data(detected_at="2026-10-07T16:05", **level))
    assert response.status_code == 302
    assert Incident.objects.get().detected_at == utc(2026, 10, 7, 23, 5)
