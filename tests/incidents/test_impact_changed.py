"""Every write that changes counted impact goes through `impact_changed`: the products'
public version moves in the write's transaction and one event names them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from incidents import events, services
from incidents.models import ImpactWindow, Product
from tests.builders import make_group, make_incident, make_location, make_product, utc

pytestmark = pytest.mark.django_db
Level = ImpactWindow.Level


@pytest.fixture
def heard() -> Iterator[list[events.IncidentEvent]]:
    seen: list[events.IncidentEvent] = []
    events.incident_event_subscribe("test-impact-changed", seen.append)
    yield seen
    events._handlers.pop("test-impact-changed", None)


def versions(*products: Product) -> list[int]:
    return [Product.objects.get(pk=p.pk).public_version for p in products]


def impact_events(seen: list[events.IncidentEvent]) -> list[frozenset[int]]:
    return [e.products for e in seen if e.kind == "impact_changed"]


def test_declare_resolve_and_levels_move_only_the_products_hit(heard: list[events.IncidentEvent]) -> None:
    gmail, gcs, quiet = make_product("Gmail"), make_product("Cloud Storage"), make_product("Quiet")
    incident = make_incident(product=gmail, start=utc(2026, 10, 8, 20))
    assert versions(gmail, gcs, quiet) == [1, 0, 0]
    services.impact_levels_set(
        incident=incident,
        levels=[services.LevelSpec(product=gcs, level=Level.PARTIAL_OUTAGE)],
        at=utc(2026, 10, 8, 21),
    )
    assert versions(gmail, gcs, quiet) == [2, 1, 0]
    services.incident_resolve(incident=incident, resolved_at=utc(2026, 10, 9, 14))
    assert versions(gmail, gcs, quiet) == [3, 2, 0]
    assert impact_events(heard) == [
        frozenset({gmail.pk}),
        frozenset({gmail.pk, gcs.pk}),
        frozenset({gmail.pk, gcs.pk}),
    ]


def test_a_window_moved_to_another_product_moves_both_and_delete_moves_the_last(
    heard: list[events.IncidentEvent],
) -> None:
    gmail, gcs = make_product("Gmail"), make_product("Cloud Storage")
    incident = make_incident(product=gmail, start=utc(2026, 10, 8, 20), end=utc(2026, 10, 8, 22))
    window = incident.windows.get()
    before = versions(gmail, gcs)
    services.impact_window_edit(
        window=window,
        product=gcs,
        level=Level.MAJOR_OUTAGE,
        started_at=window.started_at,
        ended_at=window.ended_at,
    )
    assert versions(gmail, gcs) == [before[0] + 1, before[1] + 1]
    services.impact_window_delete(window=ImpactWindow.objects.get(pk=window.pk))
    assert versions(gmail, gcs) == [before[0] + 1, before[1] + 2]
    assert impact_events(heard)[-1] == frozenset({gcs.pk})


def test_drafts_move_nothing_until_published(heard: list[events.IncidentEvent]) -> None:
    gmail = make_product("Gmail")
    draft = make_incident(product=gmail, start=utc(2026, 10, 8, 20), is_public=False)
    assert versions(gmail) == [0]
    assert impact_events(heard) == []
    services.incident_publish(incident=draft)
    assert versions(gmail) == [1]
    services.incident_delete(incident=draft)
    assert versions(gmail) == [2]
    assert impact_events(heard)[-1] == frozenset({gmail.pk})


def test_catalogue_edits_move_the_products_they_show_on() -> None:
    group = make_group("Workspace")
    gmail = make_product("Gmail", group=group)
    other = make_product("Other")
    region = make_location("us-central1")
    make_incident(product=other, location=region, start=utc(2026, 10, 8, 20), end=utc(2026, 10, 8, 21))
    base = versions(gmail, other)
    services.product_edit(product=gmail, changes={"description": "Mail"})
    services.product_group_edit(group=group, changes={"name": "Google Workspace"})
    services.location_edit(location=region, changes={"display_name": "Iowa"})
    assert versions(gmail, other) == [base[0] + 2, base[1] + 1]


def test_a_stale_copy_saved_by_the_catalogue_keeps_the_newer_version() -> None:
    gmail = make_product("Gmail")
    stale = Product.objects.get(pk=gmail.pk)
    make_incident(product=gmail, start=utc(2026, 10, 8, 20))
    services.product_edit(product=stale, changes={"position": 3})
    assert versions(gmail) == [2]
