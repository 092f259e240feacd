"""Reads with rules in them: visibility, the status rollup, the banner, durations."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from incidents import selectors, services
from incidents.models import ImpactWindow, Incident
from tests.builders import approve_report, make_incident, make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
T0 = utc(2026, 10, 8, 11, 0)
H = timedelta(hours=1)


def add_window(incident, product, start, end=None, level=Level.PARTIAL_OUTAGE, location=None):  # type: ignore[no-untyped-def]
    return services.impact_window_add(
        incident=incident, product=product, level=level, started_at=start, ended_at=end, location=location
    )


# --- product_statuses: the worst open window ------------------------------------------------


def test_it_rolls_up_the_worst_open_window() -> None:
    gmail, drive, meet = make_product("Gmail"), make_product("Drive"), make_product("Meet")
    first = make_incident(title="Slow", product=gmail, start=T0, level=Level.DEGRADED_PERFORMANCE)
    add_window(first, gmail, T0 + H, level=Level.MAJOR_OUTAGE)
    add_window(first, gmail, T0, T0 + 2 * H, level=Level.PARTIAL_OUTAGE)
    second = make_incident(title="Drive", product=drive, start=T0, level=Level.PARTIAL_OUTAGE)
    add_window(second, drive, T0, T0 + H, level=Level.MAJOR_OUTAGE)  # closed before `at`

    statuses = selectors.product_statuses(at=T0 + 3 * H)

    assert statuses == {gmail.pk: Level.MAJOR_OUTAGE, drive.pk: Level.PARTIAL_OUTAGE}
    assert meet.pk not in statuses
    assert selectors.worst_level([]) == selectors.OPERATIONAL
    assert (
        selectors.worst_level([Level.UNDER_MAINTENANCE, Level.DEGRADED_PERFORMANCE])
        == Level.DEGRADED_PERFORMANCE
    )


def test_it_treats_windows_as_half_open() -> None:
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=T0, end=T0 + H)

    assert selectors.product_statuses(at=T0 - timedelta(seconds=1)) == {}
    assert selectors.product_statuses(at=T0) == {gmail.pk: Level.MAJOR_OUTAGE}
    assert selectors.product_statuses(at=T0 + H - timedelta(seconds=1)) == {gmail.pk: Level.MAJOR_OUTAGE}
    assert selectors.product_statuses(at=T0 + H) == {}


def test_it_limits_the_rollup_to_the_given_products() -> None:
    gmail, drive = make_product("Gmail"), make_product("Drive")
    make_incident(title="a", product=gmail, start=T0)
    make_incident(title="b", product=drive, start=T0)

    assert selectors.product_statuses(at=T0 + H, products=[drive]) == {drive.pk: Level.MAJOR_OUTAGE}


def test_it_keeps_staff_only_incidents_out_of_the_public_rollup() -> None:
    calendar = make_product("Calendar")
    make_incident(title="Hidden", product=calendar, start=T0, is_public=False)

    assert selectors.product_statuses(at=T0 + H) == {}
    assert selectors.product_statuses(at=T0 + H, include_private=True) == {calendar.pk: Level.MAJOR_OUTAGE}


def test_it_rolls_up_in_one_query(django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    for i in range(5):
        make_incident(title=f"i{i}", product=make_product(f"P{i}"), start=T0)
    with django_assert_num_queries(1):
        assert len(selectors.product_statuses(at=T0 + H)) == 5


# --- page_status: the Statuspage indicator --------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "impacts", "indicator", "description"),
    [
        ([], [], "none", "All Systems Operational"),
        ([selectors.OPERATIONAL], [], "none", "All Systems Operational"),
        ([Level.UNDER_MAINTENANCE], [], "maintenance", "Service Under Maintenance"),
        ([Level.DEGRADED_PERFORMANCE], [], "minor", "Minor Service Outage"),
        ([Level.PARTIAL_OUTAGE, Level.DEGRADED_PERFORMANCE], [], "major", "Partial System Outage"),
        ([Level.PARTIAL_OUTAGE, Level.MAJOR_OUTAGE], [], "critical", "Major System Outage"),
        ([Level.UNDER_MAINTENANCE], ["minor"], "minor", "Minor Service Outage"),
        ([], ["none"], "none", "All Systems Operational"),
        ([Level.DEGRADED_PERFORMANCE], ["critical"], "critical", "Major System Outage"),
    ],
)
def test_it_computes_the_page_indicator(statuses, impacts, indicator, description) -> None:  # type: ignore[no-untyped-def]
    assert selectors.page_status(statuses=statuses, unresolved_impacts=impacts) == selectors.PageStatus(
        indicator=indicator, description=description
    )


# --- incident_durations ---------------------------------------------------------------------


def test_it_counts_overlapping_windows_once() -> None:
    gmail, drive = make_product("Gmail", position=0), make_product("Drive", position=1)
    incident = make_incident(product=gmail, start=T0, end=None)
    add_window(incident, drive, T0 + H, T0 + 3 * H)
    add_window(incident, gmail, T0 + 30 * timedelta(minutes=1), T0 + H)  # inside the first
    services.incident_resolve(incident=incident, resolved_at=T0 + 2 * H)

    durations = selectors.incident_durations(incident=incident, now=T0 + 10 * H)

    assert durations.total == 3 * H  # T0..T0+2h on Gmail joined with T0+1h..T0+3h on Drive
    assert [(pd.product.name, pd.duration) for pd in durations.per_product] == [
        ("Gmail", 2 * H),
        ("Drive", 2 * H),
    ]
    assert not durations.ongoing


def test_it_adds_a_recurrence_as_its_own_stretch() -> None:
    gcs = make_product("Cloud Storage")
    region = make_location("us-central1")
    zone = make_location("us-central1-b", kind="zone", parent=region)
    incident = make_incident(product=gcs, start=T0, location=region)
    services.impact_window_close(window=incident.windows.get(), ended_at=T0 + timedelta(hours=12, minutes=30))
    add_window(incident, gcs, utc(2026, 10, 9, 11, 5), location=zone)
    services.incident_resolve(incident=incident, resolved_at=utc(2026, 10, 9, 16, 46))

    durations = selectors.incident_durations(incident=incident)

    assert durations.total == timedelta(hours=18, minutes=11)
    (per_product,) = durations.per_product
    assert per_product.locations == (region, zone)
    assert per_product.duration == durations.total


def test_it_measures_an_ongoing_incident_up_to_now() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0)

    durations = selectors.incident_durations(incident=incident, now=T0 + 45 * timedelta(minutes=1))

    assert durations.ongoing
    assert durations.total == timedelta(minutes=45)


def test_it_uses_the_incident_times_without_windows() -> None:
    incident = make_incident(start=T0, end=T0 + 2 * H)  # no product: no window

    durations = selectors.incident_durations(incident=incident, now=T0 + 10 * H)

    assert durations.total == 2 * H
    assert durations.per_product == ()
    assert not durations.ongoing


def test_it_measures_from_given_windows_only() -> None:
    public, hidden = make_product("Gmail"), make_product("Billing", is_public=False)
    incident = make_incident(product=public, start=T0, end=None)
    add_window(incident, hidden, T0, T0 + 5 * H)
    services.incident_resolve(incident=incident, resolved_at=T0 + H)

    windows = selectors.incident_windows_public(incident=incident)
    durations = selectors.incident_durations(incident=incident, windows=windows)

    assert durations.total == H
    assert [pd.product for pd in durations.per_product] == [public]


# --- visibility and the access gate ---------------------------------------------------------


@pytest.fixture
def world():  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    billing = make_product("Billing", is_public=False)
    return {
        "gmail": gmail,
        "billing": billing,
        "public": make_incident(title="Public", product=gmail, start=T0, end=T0 + H),
        "hidden": make_incident(title="Hidden", product=gmail, start=T0, end=T0 + H, is_public=False),
        "internal": make_incident(title="Internal", product=billing, start=T0, end=T0 + H),
        "bare": make_incident(title="No windows yet", start=T0),
    }


def test_it_lists_only_public_products_and_incidents(world) -> None:  # type: ignore[no-untyped-def]
    assert list(selectors.products_public()) == [world["gmail"]]
    titles = set(selectors.incidents_public().values_list("title", flat=True))
    assert titles == {"Public", "No windows yet"}


def test_it_shows_a_mixed_incident_but_not_its_private_windows(world) -> None:  # type: ignore[no-untyped-def]
    mixed = world["public"]
    add_window(mixed, world["billing"], T0, T0 + H)

    assert mixed in selectors.incidents_public()
    public_windows = selectors.incident_windows_public(incident=mixed)
    assert [w.product for w in public_windows] == [world["gmail"]]


@pytest.mark.parametrize("name", ["hidden", "internal"])
def test_it_hides_private_incidents_from_anonymous_and_non_staff(world, bob, name) -> None:  # type: ignore[no-untyped-def]
    public_id = world[name].public_id
    for user in (AnonymousUser(), bob):
        with pytest.raises(Http404):
            selectors.incident_get_for_user(public_id=public_id, user=user)


@pytest.mark.parametrize("name", ["public", "hidden", "internal", "bare"])
def test_it_shows_staff_every_incident(world, alice, name) -> None:  # type: ignore[no-untyped-def]
    incident = selectors.incident_get_for_user(public_id=world[name].public_id, user=alice)
    assert incident == world[name]


def test_it_shows_public_incidents_to_everyone(world, bob) -> None:  # type: ignore[no-untyped-def]
    for user in (AnonymousUser(), bob):
        assert (
            selectors.incident_get_for_user(public_id=world["public"].public_id, user=user) == world["public"]
        )


def test_it_answers_404_for_an_unknown_id(alice) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Http404):
        selectors.incident_get_for_user(public_id="nosuchid0000", user=alice)


def test_it_lists_updates_newest_first() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0)
    services.incident_post_update(incident=incident, status="identified", body="b", display_at=T0 + H)
    services.incident_post_update(incident=incident, status="monitoring", body="c", display_at=T0 + 2 * H)

    assert [u.status for u in selectors.incident_updates(incident=incident)] == [
        "monitoring",
        "identified",
        Incident.Status.INVESTIGATING,
    ]


def test_it_lists_public_action_items_only_once_the_report_is_published() -> None:
    incident = make_incident(product=make_product("Gmail"), start=T0, end=T0 + H)
    services.action_item_create(incident=incident, title="Add a canary", is_public=True)
    services.action_item_create(incident=incident, title="Internal runbook", is_public=False)
    draft = services.report_save(incident=incident, summary="What happened.")

    assert selectors.action_items_public(incident=incident, report=None) == []
    assert selectors.action_items_public(incident=incident, report=draft) == []

    approve_report(incident)
    published = services.report_publish(incident=incident, published_at=T0 + 2 * H)
    titles = [item.title for item in selectors.action_items_public(incident=incident, report=published)]
    assert titles == ["Add a canary"]
