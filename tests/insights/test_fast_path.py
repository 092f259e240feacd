"""The insights page's database path (`insights.aggregates`, PostgreSQL) against its Python
path (the pure maths of `insights.metrics` and `incidents.uptime`) on hand-built history:
overlapping windows, open windows, maintenance, months that start or end on a DST change,
staff-only incidents, ties, sub-second times, windows that begin before the range or end
in the future. Every figure must be identical, down to the Decimal's representation."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents import services, uptime
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentUpdate, Product
from insights import facts, metrics, present, selectors
from tests.builders import make_group, make_product, utc

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("postgres")]

Level = ImpactWindow.Level
NOW = utc(2026, 11, 20, 18, 0)  # Pacific standard time since 1 November
MINUTE = timedelta(minutes=1)
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')


def window(product: Product, level: str, start: datetime, end: datetime | None) -> services.WindowSpec:
    return services.WindowSpec(product=product, level=level, started_at=start, ended_at=end)


def incident(
    title: str,
    *,
    start: datetime,
    windows: Sequence[services.WindowSpec] = (),
    detected: datetime | None = None,
    declared: datetime | None = None,
    updates: Sequence[datetime] = (),
    resolved: datetime | None = None,
    **kw: Any,
) -> Incident:
    """Filed at NOW (so every time is in the past), then dated as staff would have filed it."""
    with freeze_time(NOW):
        # The first entry shown when staff would have posted it (ADR 0013: by default the
        # posting time, here NOW), so the cadence runs from detection as it did then.
        kw.setdefault("first_update_at", detected or start)
        made = services.incident_open(
            title=title, started_at=start, detected_at=detected, windows=windows, **kw
        )
        for at in updates:
            status = Incident.Status.IDENTIFIED if not made.is_maintenance else Incident.Status.IN_PROGRESS
            services.incident_post_update(incident=made, status=status, body="More.", display_at=at)
        if resolved is not None:
            services.incident_resolve(incident=made, resolved_at=resolved, body="Fixed.")
    Incident.objects.filter(pk=made.pk).update(created_at=declared or start + 7 * MINUTE)
    # Written around the services: the stored facts follow by hand, as after any SQL fix.
    facts.incident_facts_refresh([made.pk])
    return made


def build_history() -> dict[str, Any]:
    storage_group = make_group("Storage and compute")
    make_group("Empty", position=2)
    staff_group = make_group("Internal", position=1)
    storage = make_product("Storage", group=storage_group)
    compute = make_product("Compute", group=storage_group, position=1)
    make_product("Idle", group=storage_group, position=2)  # never affected
    mail = make_product("Mail")
    secret = make_product("Secret", group=staff_group, is_public=False)

    # Overlapping windows within one incident (a minute counts once, at its worst level),
    # sub-second edges, and updates whose cadence rounds half to even.
    oct8 = utc(2026, 10, 8, 11)
    big = incident(
        "Storage writes failing",
        start=oct8,
        detected=oct8 + 50 * MINUTE,
        windows=[
            window(storage, Level.MAJOR_OUTAGE, oct8, oct8 + 60 * MINUTE),
            window(
                storage,
                Level.PARTIAL_OUTAGE,
                oct8 + 30 * MINUTE + timedelta(microseconds=400_000),
                oct8 + 3 * 60 * MINUTE + timedelta(seconds=30, microseconds=900_000),
            ),
            window(compute, Level.DEGRADED_PERFORMANCE, oct8, oct8 + 14 * 60 * MINUTE),
        ],
        # 50 min, +1 s, +5 s: (last - first) / 2 = 2.5 s, shown as 2 s (half to even).
        updates=[oct8 + 50 * MINUTE + timedelta(seconds=1)],
        resolved=oct8 + 50 * MINUTE + timedelta(seconds=5),
    )
    # Overlapping windows across incidents; staff-only, never detected.
    incident(
        "Storage latency (staff only)",
        start=oct8 - 60 * MINUTE,
        windows=[window(storage, Level.PARTIAL_OUTAGE, oct8 - 60 * MINUTE, oct8 + 45 * MINUTE)],
        updates=[oct8],
        resolved=oct8 + 45 * MINUTE,
        is_public=False,
    )
    # Maintenance under an outage (the partial outage wins its minutes) and beside one.
    incident(
        "Storage upgrade",
        kind=Incident.Kind.MAINTENANCE,
        start=oct8 + 2 * 60 * MINUTE,
        scheduled_for=oct8 + 2 * 60 * MINUTE,
        scheduled_until=oct8 + 5 * 60 * MINUTE,
        windows=[
            window(storage, Level.UNDER_MAINTENANCE, oct8 + 2 * 60 * MINUTE, oct8 + 5 * 60 * MINUTE),
            window(mail, Level.UNDER_MAINTENANCE, oct8 + 2 * 60 * MINUTE, oct8 + 5 * 60 * MINUTE),
        ],
        resolved=oct8 + 5 * 60 * MINUTE,
    )
    # Across the start of November (07:00 UTC) and the end of daylight time (09:00 UTC).
    fall = utc(2026, 11, 1, 6, 15)
    incident(
        "Compute down over the clock change",
        start=fall,
        detected=fall + 3 * MINUTE,
        windows=[
            window(compute, Level.MAJOR_OUTAGE, fall, fall + 4 * 60 * MINUTE),
            window(storage, Level.PARTIAL_OUTAGE, fall + 30 * MINUTE, fall + 90 * MINUTE),
        ],
        # (last - first) / 2 = 0.5000005 s: 0.500000 s (half to even), then 0 s (again).
        updates=[fall + 3 * MINUTE + timedelta(microseconds=1)],
        resolved=fall + 3 * MINUTE + timedelta(seconds=1, microseconds=1),
    )
    # Across the start of March (08:00 UTC) and the start of daylight time (8 March).
    spring = utc(2026, 3, 1, 6, 30)
    incident(
        "Mail degraded for a week",
        start=spring,
        detected=spring + 4 * MINUTE,
        windows=[window(mail, Level.PARTIAL_OUTAGE, spring, utc(2026, 3, 8, 12))],
        updates=[spring + 20 * MINUTE, spring + 40 * MINUTE],
        resolved=utc(2026, 3, 8, 12),
    )
    # Starting exactly on a month's first local midnight (1 June 00:00 PDT).
    june = utc(2026, 6, 1, 7)
    incident(
        "Compute at midnight",
        start=june,
        detected=june + 4 * MINUTE,
        windows=[window(compute, Level.MAJOR_OUTAGE, june, june + 2 * 60 * MINUTE)],
        resolved=june + 2 * 60 * MINUTE,
    )
    # Begun before the range (only its downtime inside the range counts), staff-only product.
    incident(
        "Secret partial outage",
        start=utc(2025, 11, 20),
        detected=utc(2025, 11, 20, 1),
        windows=[window(secret, Level.PARTIAL_OUTAGE, utc(2025, 11, 20), utc(2025, 12, 10))],
        resolved=utc(2025, 12, 10),
    )
    # No window at all: counted (no impact) only when every product is in scope.
    incident("Status page slow", start=utc(2026, 7, 4, 12), detected=utc(2026, 7, 4, 12, 4))
    # Ties: the same time to detect, ordered by incident id.
    for i, product in enumerate((storage, compute, mail, storage)):
        start = utc(2026, 9, 10 + i, 9)
        incident(
            f"Tie {i}",
            start=start,
            detected=start + 4 * MINUTE,
            windows=[window(product, Level.PARTIAL_OUTAGE, start, start + (20 + i) * MINUTE)],
            updates=[start + 10 * MINUTE],
            resolved=start + (20 + i) * MINUTE,
        )
    # Still open: its window runs to now, and it has no time to resolve.
    opened = NOW - 3 * 60 * MINUTE
    incident(
        "Mail down now",
        start=opened,
        detected=opened + 5 * MINUTE,
        windows=[window(mail, Level.MAJOR_OUTAGE, opened, None)],
    )
    # Maintenance running now with a planned end after now, and one not yet begun.
    with freeze_time(NOW):
        services.incident_open(
            title="Compute maintenance now",
            kind=Incident.Kind.MAINTENANCE,
            scheduled_for=NOW - 60 * MINUTE,
            scheduled_until=NOW + 60 * MINUTE,
            windows=[window(compute, Level.UNDER_MAINTENANCE, NOW - 60 * MINUTE, NOW + 60 * MINUTE)],
        )
        services.incident_open(
            title="Storage maintenance next week",
            kind=Incident.Kind.MAINTENANCE,
            scheduled_for=NOW + timedelta(days=7),
            scheduled_until=NOW + timedelta(days=7, hours=2),
            windows=[
                window(
                    storage,
                    Level.UNDER_MAINTENANCE,
                    NOW + timedelta(days=7),
                    NOW + timedelta(days=7, hours=2),
                )
            ],
        )
    # Action items: opened, closed (dated by their last change) and overdue at each period's
    # end, including the edges (closed exactly at a period's end, due on its last day).
    end_october = utc(2026, 11, 1, 7)  # the end of October, Pacific time
    older = Incident.objects.get(title="Secret partial outage")
    mail_week = Incident.objects.get(title="Mail degraded for a week")
    for title, on, status, due, created, changed in [
        ("Open, overdue", big, "open", date(2026, 10, 20), oct8, oct8),
        ("Closed in time", big, "done", date(2026, 10, 15), oct8, utc(2026, 10, 12)),
        ("Closed late", big, "done", date(2026, 10, 15), oct8, utc(2026, 11, 3)),
        ("Closed at the end of October", big, "wont_do", date(2026, 10, 2), oct8, end_october),
        ("Due on the last day of October", big, "open", date(2026, 10, 31), oct8, oct8),
        ("No due date", mail_week, "in_progress", None, spring, spring),
        ("Dropped in March", mail_week, "wont_do", date(2026, 3, 10), spring, utc(2026, 3, 15)),
        ("Opened on the first of June", mail_week, "open", date(2026, 6, 30), june, june),
        ("From before the range", older, "open", date(2025, 11, 30), utc(2025, 11, 21), utc(2025, 11, 21)),
        ("Closed before the range", older, "done", date(2025, 11, 30), utc(2025, 11, 21), utc(2025, 11, 25)),
        ("Due today", big, "open", NOW.date(), oct8, oct8),
        ("Due yesterday", big, "in_progress", NOW.date() - timedelta(days=1), oct8, NOW - MINUTE),
    ]:
        item = ActionItem.objects.create(incident=on, title=title, status=status, due_date=due)
        ActionItem.objects.filter(pk=item.pk).update(created_at=created, updated_at=changed)
    return {"storage_window": ImpactWindow.objects.get(incident=big, level=Level.MAJOR_OUTAGE)}


def scope_keys() -> list[str]:
    choices = selectors.scope_choices()
    return [key for key, _ in choices.options()]


def both(
    key: str, granularity: str, last: date, now: datetime = NOW, period_response: bool = False
) -> tuple[Any, Any]:
    scope = selectors.scope_choices().resolve(key)
    assert scope is not None
    kw: dict[str, Any] = {
        "scope": scope,
        "granularity": granularity,
        "last": last,
        "now": now,
        "period_response": period_response,
    }
    return selectors.insights_page_sql(**kw), selectors.insights_page_python(**kw)


def assert_same(fast: selectors.InsightsPage, slow: selectors.InsightsPage) -> None:
    assert fast.rows is None and slow.rows is not None
    for field in dataclasses.fields(selectors.InsightsPage):
        if field.name == "rows":
            continue
        # repr, not ==: Decimal("60") == Decimal("60.0"), but the page would show them apart.
        assert repr(getattr(fast, field.name)) == repr(getattr(slow, field.name)), field.name


@pytest.mark.parametrize("granularity", metrics.GRANULARITIES)
@pytest.mark.parametrize("last", [date(2026, 11, 1), date(2026, 10, 1), date(2026, 3, 1)])
def test_the_database_gives_every_figure_the_python_maths_gives(granularity: str, last: date) -> None:
    build_history()
    keys = scope_keys()
    assert len(keys) == 1 + 3 + 5  # all, three groups, five products
    for key in keys:
        for period_response in (False, True):
            fast, slow = both(key, granularity, last, period_response=period_response)
            assert_same(fast, slow)
            assert (fast.summaries[-1].response is not None) == period_response


def test_the_history_exercises_what_it_claims() -> None:
    """The hand-built history must really contain the hard cases (else the comparison above
    proves little): overlaps, an ongoing window, maintenance, DST months, ties, staff-only."""
    build_history()
    fast, slow = both("all", metrics.MONTH, date(2026, 11, 1))
    by_label = {s.period.label: s for s in fast.summaries}
    november, october, march = by_label["2026-11"], by_label["2026-10"], by_label["2026-03"]
    # November is 30 days and 1 hour long (the clock goes back), measured up to now.
    assert november.period.end - november.period.start == timedelta(days=30, hours=1)
    assert november.open_incidents == 1 and november.maintenance == 2
    assert november.downtime.uptime.period_minutes < 5 * 30 * 24 * 60  # five products, not whole
    # March is 31 days less the hour lost on 8 March.
    assert march.period.end - march.period.start == timedelta(days=30, hours=23)
    # October: the storage major hour, the partial outage around it (merged, counted once),
    # the other incident's overlapping partial outage, the maintenance not counted.
    # The incident at 06:15 UTC on 1 November began on 31 October, Pacific time.
    assert october.maintenance == 1 and october.level_count(uptime.MAJOR_OUTAGE) == 2
    storage, _ = both("product:storage", metrics.MONTH, date(2026, 11, 1))
    storage_october = next(s for s in storage.summaries if s.period.label == "2026-10")
    # 8 October: 10:00-11:00 partial, 11:00-12:00 major, 12:00-14:00:30.9 partial (the
    # maintenance under it counts nothing); 1 November 06:45-07:00 UTC is still October.
    assert storage_october.downtime.total == timedelta(hours=4, minutes=15, seconds=30, microseconds=900_000)
    # Each level's time is truncated to whole seconds before weighting: 195.5 partial minutes.
    assert storage_october.downtime.weighted_minutes == 60 + Decimal("195.5") * Decimal("0.3")
    items = {a.period.label: a for a in fast.action_items}
    # October: seven opened on 8 October, "Closed in time" closed ("Closed at the end of
    # October" closed at its very end: November's). Overdue at its end (1 November, local
    # date): "Open, overdue", "Closed late", "Closed at the end of October", "Due on the
    # last day of October", June's and the one from before the range.
    assert (items["2026-10"].opened, items["2026-10"].closed, items["2026-10"].overdue) == (7, 1, 6)
    assert items["2026-11"].closed == 2  # that one and "Closed late"
    # Created at 06:30 UTC on 1 March: still 28 February, Pacific time.
    assert (items["2026-02"].opened, items["2026-03"].opened, items["2026-03"].closed) == (2, 0, 1)
    assert items["2025-12"].overdue == 1
    assert fast.response.detect.count == slow.response.detect.count >= 8
    assert fast.response.cadence.count >= 3
    assert fast.incident_count == len([r for r in slow.rows or () if not r.facts.is_maintenance])
    assert {r.facts.title for r in fast.listed} >= {"Mail down now", "Storage latency (staff only)"}


def test_cadence_rounds_like_python_at_the_halves() -> None:
    build_history()
    fast, slow = both("all", metrics.MONTH, date(2026, 11, 1))
    rows = {r.facts.title: r for r in slow.rows or ()}
    # 5 s over two intervals: 2.5 s, to the even second.
    assert rows["Storage writes failing"].update_cadence == timedelta(seconds=2)
    # 1.000001 s over two intervals: 0.5000005 s -> 0.500000 s (even microsecond) -> 0 s.
    assert rows["Compute down over the clock change"].update_cadence == timedelta(0)
    assert repr(fast.response.cadence) == repr(slow.response.cadence)


def test_the_strip_chart_ranks_and_the_percentiles_agree_on_a_long_distribution() -> None:
    """More incidents than the strip chart draws: the database returns the drawn ranks."""
    product = make_product("Busy")
    start = utc(2026, 6, 1, 12)
    incidents = Incident.objects.bulk_create(
        [
            Incident(
                public_id=f"busy{i:04d}",
                title=f"Busy {i}",
                started_at=start + timedelta(hours=i),
                detected_at=start + timedelta(hours=i, seconds=(i * 37) % 301),
                resolved_at=start + timedelta(hours=i, minutes=10 + (i * 13) % 97),
            )
            for i in range(263)
        ]
    )
    ImpactWindow.objects.bulk_create(
        ImpactWindow(
            incident=inc,
            product=product,
            level=Level.PARTIAL_OUTAGE,
            started_at=inc.started_at,
            ended_at=inc.resolved_at,
        )
        for inc in incidents
    )
    IncidentUpdate.objects.bulk_create(
        IncidentUpdate(incident=inc, status="investigating", body="x", display_at=at)
        for inc in incidents
        for at in (inc.detected_at, inc.resolved_at)
        if at is not None
    )
    facts.facts_rebuild()  # bulk-loaded history, as `manage.py rebuild_incident_facts` after a load
    for key in ("all", "product:busy"):
        fast, slow = both(key, metrics.MONTH, date(2026, 11, 1))
        assert_same(fast, slow)
        assert fast.response.resolve.count == 263
        assert len(fast.response.resolve.drawn()) == metrics.STRIP_POINTS


def test_a_window_edit_changes_the_figures_at_once(staff_client: Client) -> None:
    """Nothing is precomputed: the next render after a window write shows it."""
    made = build_history()
    scope = selectors.scope_choices().resolve("product:storage")
    assert scope is not None
    before = selectors.insights_page_sql(
        scope=scope, granularity=metrics.MONTH, last=date(2026, 11, 1), now=NOW
    )
    with freeze_time(NOW):
        w = made["storage_window"]
        services.impact_window_edit(
            window=w,
            product=w.product,
            level=Level.MAJOR_OUTAGE,
            started_at=w.started_at,
            ended_at=w.ended_at + 60 * MINUTE,
        )
    after = selectors.insights_page_sql(
        scope=scope, granularity=metrics.MONTH, last=date(2026, 11, 1), now=NOW
    )
    october = next(s for s in before.summaries if s.period.label == "2026-10")
    october_after = next(s for s in after.summaries if s.period.label == "2026-10")
    # The hour that was partial outage under the extended major outage now weighs 1, not 0.3.
    assert october_after.downtime.weighted_minutes - october.downtime.weighted_minutes == 60 - 18
    assert october_after.downtime.total == october.downtime.total
    _, slow = both("product:storage", metrics.MONTH, date(2026, 11, 1))
    assert_same(after, slow)


def test_the_page_and_its_csvs_are_the_same_bytes_on_both_paths(
    staff_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_history()
    urls = [
        "/manage/insights/",
        "/manage/insights/?by=quarter&scope=group:" + str(selectors.scope_choices().groups[0].pk),
    ]
    urls += [f"/manage/insights/{name}.csv?scope=product:storage" for name in present.CHARTS]

    def fetch() -> list[bytes]:
        with freeze_time(NOW):
            # The logout form's CSRF token is masked afresh on every response.
            return [CSRF.sub(b"", staff_client.get(url).content) for url in urls]

    fast = fetch()
    monkeypatch.setattr(selectors, "insights_page_sql", selectors.insights_page_python)
    slow = fetch()
    assert fast == slow
    assert b"Storage writes failing" in fast[0]
