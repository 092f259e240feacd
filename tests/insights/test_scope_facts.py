"""The per-scope facts (`insights.scope_facts`: every incident as each scope sees it, the
month sums, each product's downtime per month) kept by the write services' hooks against
a rebuild from scratch, and the page they give against the Python path (the direct
computation from incidents and windows) for every scope, after updates, resolves,
deletions and regroupings. Design: docs/adr/0035-scope-facts.md."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident, Product
from insights import facts, metrics, selectors
from insights.models import DowntimeMonth, ScopeFacts, ScopeIncident
from tests.builders import make_group, make_product, utc
from tests.insights.test_facts import LEVELS, random_history

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("postgres")]

Level = ImpactWindow.Level
NOW = utc(2026, 11, 20, 18, 0)
MINUTE = timedelta(minutes=1)


def snapshot() -> tuple[set[Any], ...]:
    def rows(model: Any) -> set[Any]:
        names = [f.attname for f in model._meta.concrete_fields if not f.primary_key]
        return set(model.objects.values_list(*names))

    return rows(ScopeIncident), rows(ScopeFacts), rows(DowntimeMonth)


def assert_kept_as_rebuilt() -> None:
    """What the hooks left equals what the rebuild writes (and the rebuild changes nothing)."""
    kept = snapshot()
    facts.facts_rebuild()
    assert snapshot() == kept


def assert_page_is_the_direct_computation(now: datetime = NOW, last: date = date(2026, 11, 20)) -> None:
    choices = selectors.scope_choices()
    for key, _ in choices.options():
        scope = choices.resolve(key)
        assert scope is not None
        for granularity in metrics.GRANULARITIES:
            args: dict[str, Any] = {"scope": scope, "granularity": granularity, "last": last, "now": now}
            fast = selectors.insights_page_sql(**args)
            slow = selectors.insights_page_python(**args)
            for name in ("summaries", "response", "incident_count", "behind", "total", "listed"):
                # repr: Decimal("60") == Decimal("60.0"), but the page shows them apart.
                assert repr(getattr(fast, name)) == repr(getattr(slow, name)), (key, granularity, name)


def check() -> None:
    assert_page_is_the_direct_computation()
    assert_kept_as_rebuilt()


def test_every_write_keeps_the_scope_facts_and_the_page_right() -> None:
    compute, storage = make_group("Compute"), make_group("Storage", position=1)
    vm = make_product("VM", group=compute)
    disk = make_product("Disk", group=storage, position=1)
    mail = make_product("Mail", position=2)
    start = utc(2026, 10, 31, 22)  # crosses into November in the display zone's evening
    with freeze_time(NOW):
        made = services.incident_open(
            title="VMs and disks failing",
            started_at=start,
            detected_at=start + 4 * MINUTE,
            first_update_at=start + 9 * MINUTE,
            windows=[
                services.WindowSpec(product=vm, level=Level.MAJOR_OUTAGE, started_at=start),
                services.WindowSpec(
                    product=disk,
                    level=Level.DEGRADED_PERFORMANCE,
                    started_at=start,
                    ended_at=start + 90 * MINUTE,
                ),
            ],
        )
        other = services.incident_open(
            title="Mail slow",
            started_at=start - timedelta(days=40),
            first_update_at=start - timedelta(days=40),
            windows=[
                services.WindowSpec(
                    product=mail, level=Level.PARTIAL_OUTAGE, started_at=start - timedelta(days=40)
                )
            ],
        )
        check()
        services.incident_post_update(
            incident=made, status="identified", body="Found.", display_at=start + 50 * MINUTE
        )
        check()  # an update: the cadence moves
        services.incident_resolve(incident=made, resolved_at=start + 5 * 60 * MINUTE, body="Fixed.")
        check()  # resolved: no longer open, a time to resolve, the open stretch closed
        services.incident_edit(incident=other, changes={"started_at": start - timedelta(days=70)})
        check()  # moved to another month
        mail.group = storage  # as the admin's form leaves it before the service runs
        services.product_edit(product=mail, changes={"group": storage})
        check()  # regrouped: into a group
        services.product_edit(product=vm, changes={"group": None})
        check()  # out of its group
        services.product_group_delete(group=storage)
        check()  # its products left with it
        services.incident_delete(incident=made)
        check()  # deleted: taken out of every sum
    assert not ScopeIncident.objects.filter(incident_id=made.pk).exists()
    assert set(ScopeIncident.objects.filter(incident_id=other.pk).values_list("scope", flat=True)) == {
        "all",
        f"p{mail.pk}",
    }


def test_impact_ongoing_or_ending_after_now_is_read_live() -> None:
    """Open stretches and stretches that end in the future (scheduled maintenance, a
    window closed ahead) are counted up to now only, whatever month they end in."""
    group = make_group("Compute")
    vm = make_product("VM", group=group)
    disk = make_product("Disk", group=group, position=1)
    with freeze_time(NOW):
        services.incident_open(
            title="Ongoing",
            started_at=NOW - timedelta(days=25),
            first_update_at=NOW - timedelta(days=25),
            windows=[
                services.WindowSpec(
                    product=vm, level=Level.PARTIAL_OUTAGE, started_at=NOW - timedelta(days=25)
                )
            ],
        )
        services.incident_open(
            title="Closes next month",
            kind=Incident.Kind.MAINTENANCE,
            started_at=NOW - timedelta(days=3),
            scheduled_for=NOW - timedelta(days=3),
            scheduled_until=NOW + timedelta(days=15),
            first_update_at=NOW - timedelta(days=3),
            windows=[
                services.WindowSpec(
                    product=disk,
                    level=Level.UNDER_MAINTENANCE,
                    started_at=NOW - timedelta(days=3),
                    ended_at=NOW + timedelta(days=15),
                )
            ],
        )
        check()
    later = NOW + timedelta(days=20)  # the scheduled window is over, in the next month
    assert_page_is_the_direct_computation(now=later, last=date(2026, 12, 10))
    with freeze_time(later):
        assert_kept_as_rebuilt()


@pytest.mark.parametrize("seed", range(3))
def test_random_histories_with_regroupings(seed: int) -> None:
    rng = random.Random(seed)
    groups = [make_group(f"G{i}", position=i) for i in range(2)]
    products = [make_product(f"P{i}", position=i, group=rng.choice([*groups, None])) for i in range(4)]
    with freeze_time(NOW):
        random_history(rng, products)
        check()
        for product in rng.sample(products, 2):
            services.product_edit(product=product, changes={"group": rng.choice([*groups, None])})
        services.incident_delete(incident=rng.choice(list(Incident.objects.order_by("pk"))))
        window = ImpactWindow.objects.order_by("pk").first()
        if window is not None:
            services.impact_window_edit(
                window=window,
                product=rng.choice(products),
                level=rng.choice(LEVELS),
                started_at=window.started_at,
                ended_at=window.started_at + timedelta(hours=rng.randint(1, 900)),
            )
        check()
    assert Product.objects.count() == 4
