"""The stored insights facts (`insights.facts`) against a fresh computation after every
write path, and the page they give against the Python path over seeded random histories.
Design: docs/adr/0018-incident-facts.md."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from freezegun import freeze_time

from incidents import services, uptime
from incidents.models import ImpactWindow, Incident, Product
from insights import facts, history, metrics, selectors
from insights.models import ImpactStretch, IncidentFacts
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 20, 18, 0)
MINUTE = timedelta(minutes=1)
LEVELS = [Level.MAJOR_OUTAGE, Level.PARTIAL_OUTAGE, Level.DEGRADED_PERFORMANCE, Level.UNDER_MAINTENANCE]


def stored() -> tuple[set[Any], set[Any]]:
    rows = {
        tuple(getattr(f, field.attname) for field in IncidentFacts._meta.concrete_fields)
        for f in IncidentFacts.objects.all()
    }
    stretches = set(ImpactStretch.objects.values_list("product_id", "severity", "started_at", "ended_at"))
    return rows, stretches


def fresh() -> tuple[set[Any], set[Any]]:
    """What the facts should be, computed from scratch (not through the stored rows)."""
    spans: dict[int, list[uptime.Span]] = {}
    for w in ImpactWindow.objects.all():
        spans.setdefault(w.incident_id, []).append(
            uptime.Span(level=w.level, start=w.started_at, end=w.ended_at, incident_id=w.incident_id)
        )
    computed = [
        facts.facts_row(f) for f in history.facts_of(history.fact_rows(Incident.objects.all()), spans=spans)
    ]
    rows = {
        tuple(getattr(f, field.attname) for field in IncidentFacts._meta.concrete_fields) for f in computed
    }
    stretches = {
        (p, *s)
        for p in Product.objects.values_list("pk", flat=True)
        for s in facts.stretches(
            ImpactWindow.objects.filter(product_id=p).values_list("level", "started_at", "ended_at")
        )
    }
    return rows, stretches


def assert_fresh() -> None:
    assert stored() == fresh()


def test_it_keeps_the_facts_fresh_through_every_write_path() -> None:
    storage, mail = make_product("Storage"), make_product("Mail", position=1)
    start = utc(2026, 10, 8, 11)
    with freeze_time(NOW):
        made = services.incident_open(
            title="Writes failing",
            started_at=start,
            first_update_at=start + 5 * MINUTE,
            windows=[services.WindowSpec(product=storage, level=Level.MAJOR_OUTAGE, started_at=start)],
        )
        assert_fresh()
        draft = services.incident_open(
            title="Draft from an alert",
            started_at=start + 30 * MINUTE,
            is_public=False,
            first_update_at=start + 30 * MINUTE,
            windows=[
                services.WindowSpec(product=mail, level=Level.PARTIAL_OUTAGE, started_at=start + 30 * MINUTE)
            ],
        )
        assert_fresh()
        services.incident_post_update(
            incident=made, status="identified", body="Found.", display_at=start + 40 * MINUTE
        )
        assert_fresh()
        window = services.impact_window_add(
            incident=draft, product=storage, level=Level.DEGRADED_PERFORMANCE, started_at=start + 35 * MINUTE
        )
        assert_fresh()  # a draft's window: no public announcement, the staff figures move
        services.impact_window_close(window=window, ended_at=start + 50 * MINUTE)
        assert_fresh()
        services.impact_window_edit(
            window=window,
            product=mail,
            level=Level.MAJOR_OUTAGE,
            started_at=start + 36 * MINUTE,
            ended_at=start + 55 * MINUTE,
        )
        assert_fresh()
        services.incident_edit(incident=draft, changes={"detected_at": start + 45 * MINUTE})
        assert_fresh()  # only the detection time: nothing about impact announced before
        services.incident_edit(incident=made, changes={"started_at": start - 10 * MINUTE})
        assert_fresh()
        services.incident_levels_change(
            incident=made,
            levels=[services.LevelSpec(product=mail, level=Level.DEGRADED_PERFORMANCE)],
            at=start + 60 * MINUTE,
        )
        assert_fresh()
        services.incident_publish(incident=draft)
        assert_fresh()
        services.incident_resolve(incident=made, resolved_at=start + 90 * MINUTE, body="Fixed.")
        assert_fresh()
        services.incident_post_update(
            incident=made, status="investigating", body="Back.", display_at=start + 95 * MINUTE
        )
        assert_fresh()  # reopened: open again, no time to resolve
        services.impact_window_delete(window=ImpactWindow.objects.get(pk=window.pk))
        assert_fresh()
        services.incident_delete(incident=draft)
        assert_fresh()
    assert IncidentFacts.objects.filter(pk=made.pk, is_open=True).exists()
    assert not IncidentFacts.objects.filter(pk=draft.pk).exists()


def test_the_command_rebuilds_what_was_written_around_the_services() -> None:
    product = make_product("Storage")
    with freeze_time(NOW):
        made = services.incident_open(
            title="Writes failing",
            started_at=utc(2026, 10, 8, 11),
            first_update_at=utc(2026, 10, 8, 11),
            windows=[
                services.WindowSpec(
                    product=product, level=Level.MAJOR_OUTAGE, started_at=utc(2026, 10, 8, 11)
                )
            ],
        )
    Incident.objects.filter(pk=made.pk).update(detected_at=utc(2026, 10, 8, 12))
    ImpactWindow.objects.filter(incident=made).update(ended_at=utc(2026, 10, 8, 13))
    assert stored() != fresh()
    call_command("rebuild_incident_facts", stdout=open("/dev/null", "w"))  # noqa: SIM115 - closed with the process
    assert_fresh()


@pytest.mark.parametrize("seed", range(40))
def test_stretches_partition_the_time_as_the_status_page_counts_it(seed: int) -> None:
    """Pure: each level's time in the stretches is `incidents.uptime.exclusive_levels`'."""
    rng = random.Random(seed)
    base = utc(2026, 3, 1)
    windows = []
    for _ in range(rng.randint(0, 12)):
        start = base + timedelta(minutes=rng.randint(0, 600))
        end = None if rng.random() < 0.15 else start + timedelta(minutes=rng.randint(0, 240))
        windows.append((rng.choice(LEVELS), start, end))
    horizon = base + timedelta(minutes=rng.randint(300, 1200))
    spans = [uptime.Span(level=lv, start=s, end=e) for lv, s, e in windows]
    expected = uptime.exclusive_levels(spans, start=base, end=horizon, now=horizon)
    got: dict[int, timedelta] = {}
    for s in facts.stretches(windows):
        end = horizon if s.end is None else min(s.end, horizon)
        if end > s.start:
            got[s.severity] = got.get(s.severity, timedelta(0)) + (end - s.start)
    want = {
        uptime.SEVERITY[level]: sum((iv.duration for iv in ivs), timedelta(0))
        for level, ivs in expected.items()
    }
    assert got == {k: v for k, v in want.items() if v}


def random_history(rng: random.Random, products: list[Product]) -> None:
    """Incidents, drafts and maintenance through the services, at random but seeded."""
    for i in range(rng.randint(4, 9)):
        start = utc(2026, 1, 1) + timedelta(
            minutes=rng.randint(0, 320 * 24 * 60), microseconds=rng.randint(0, 999_999)
        )
        maintenance = rng.random() < 0.15
        windows = [
            services.WindowSpec(
                product=rng.choice(products),
                level=Level.UNDER_MAINTENANCE if maintenance else rng.choice(LEVELS[:3]),
                started_at=start + timedelta(minutes=rng.randint(0, 30)),
                ended_at=None if rng.random() < 0.2 else start + timedelta(minutes=rng.randint(31, 600)),
            )
            for _ in range(rng.randint(0, 3))
        ]
        extra: dict[str, Any] = (
            {
                "kind": Incident.Kind.MAINTENANCE,
                "scheduled_for": start,
                "scheduled_until": start + 600 * MINUTE,
            }
            if maintenance
            else {}
        )
        detected = None if rng.random() < 0.3 else start + timedelta(seconds=rng.randint(0, 3600))
        made = services.incident_open(
            title=f"Random {i}",
            started_at=start,
            detected_at=detected,
            is_public=rng.random() < 0.8,
            first_update_at=start + timedelta(seconds=rng.randint(0, 7200)),
            windows=windows,
            **extra,
        )
        for k in range(rng.randint(0, 2)):
            status = Incident.Status.IN_PROGRESS if maintenance else Incident.Status.IDENTIFIED
            at = start + timedelta(seconds=rng.randint(7200, 9000) + k)
            services.incident_post_update(incident=made, status=status, body=f"More {k}.", display_at=at)
        if rng.random() < 0.7:
            services.incident_resolve(
                incident=made, resolved_at=start + timedelta(minutes=rng.randint(160, 700)), body="Done."
            )


@pytest.mark.usefixtures("postgres")
@pytest.mark.parametrize("seed", range(3))
def test_the_page_from_facts_is_the_python_definition_over_random_histories(seed: int) -> None:
    rng = random.Random(seed)
    products = [make_product(f"P{i}", position=i) for i in range(3)]
    with freeze_time(NOW):
        random_history(rng, products)
    assert_fresh()
    with freeze_time(NOW):
        for key in ("all", "product:p0"):
            scope = selectors.scope_choices().resolve(key)
            assert scope is not None
            for granularity in metrics.GRANULARITIES:
                args: dict[str, Any] = {
                    "scope": scope,
                    "granularity": granularity,
                    "last": date(2026, 11, 20),
                    "now": NOW,
                }
                fast = selectors.insights_page_sql(**args)
                slow = selectors.insights_page_python(**args)
                for name in ("summaries", "response", "incident_count", "behind", "total"):
                    assert repr(getattr(fast, name)) == repr(getattr(slow, name)), name
