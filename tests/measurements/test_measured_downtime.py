"""Measured downtime from a real Prometheus holding the Cloud Storage incident of 8-9
October 2026, reconciled with the declared windows; with the source unreachable, the
declared windows count and the gap is reported."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from credits import reconcile, sla, sla_measured
from incidents.intervals import Interval
from incidents.models import ImpactWindow, Incident, Location, Product
from measurements.models import SliSource
from tests.builders import make_incident, make_location, make_product
from tests.measurements.prom import FIRST, SECOND, free_port, run_prometheus

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
ERRORS = "sum(increase(sli_errors_total{selector}[{window}]))"
VALID = "sum(increase(sli_requests_total{selector}[{window}]))"
PARTIAL = ImpactWindow.Level.PARTIAL_OUTAGE
POLICY = sla.Policy(
    target=D("99.9"),
    time_zone="US/Pacific",
    weights=((PARTIAL, D(1)),),
    tiers=(sla.Tier(D("99.9"), D(10)), sla.Tier(D("99.0"), D(25)), sla.Tier(D("95.0"), D(50))),
    unit=sla.UNIT_PERCENT,
)


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from run_prometheus(Path(tmp_path_factory.mktemp("prometheus")))


def _incident(base_url: str, variant: str) -> tuple[Incident, Location, Location]:
    gcs = make_product("Cloud Storage")
    region = make_location("us-central1")
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=region)
    incident = make_incident(
        title="Cloud Storage elevated write latency and errors in us-central1",
        product=gcs,
        location=region,
        start=FIRST[0],
        end=FIRST[1],
        level=PARTIAL,
    )
    ImpactWindow.objects.create(
        incident=incident, product=gcs, location=zone, level=PARTIAL, started_at=SECOND[0], ended_at=SECOND[1]
    )
    for location in (region, zone):
        SliSource.objects.create(
            product=gcs,
            location=location,
            base_url=base_url,
            errors_query=ERRORS,
            valid_query=VALID,
            label_selector=f'location="{location.name}",variant="{variant}"',
        )
    return incident, region, zone


@pytest.mark.django_db
def test_measured_downtime_equals_the_declared_windows(prometheus_url: str) -> None:
    incident, _, _ = _incident(prometheus_url, "exact")
    region, zone = reconcile.incident_reconciliation(incident, now=NOW)
    assert (region.location, zone.location) == ("us-central1", "us-central1-b")
    assert not region.problem and not region.gaps and not zone.gaps
    # 12 h 30 min, on the five-minute grid exactly.
    assert region.declared_minutes == region.measured_minutes == D(750)
    assert region.measured == [Interval(*FIRST)] and region.undeclared == region.unmeasured == []
    # 5 h 41 min declared; the 16:45-16:50 period holds one bad minute of five (6 %
    # errors, above 5 %), so the measurement says 5 h 45 min: within one period.
    assert zone.declared_minutes == D(341)
    assert zone.measured_minutes == D(345)
    assert abs(zone.measured_minutes - zone.declared_minutes) < 5
    assert zone.undeclared == [Interval(SECOND[1], SECOND[1] + timedelta(minutes=4))]


@pytest.mark.django_db
def test_impact_measured_before_the_declared_window_is_shown_and_credited(prometheus_url: str) -> None:
    incident, region_loc, _ = _incident(prometheus_url, "early")
    region, _zone = reconcile.incident_reconciliation(incident, now=NOW)
    early = FIRST[0] - timedelta(minutes=20)
    assert region.measured == [Interval(early, FIRST[1])]
    assert region.undeclared == [Interval(early, FIRST[0])]  # the suggested draft window
    assert region.agree == [Interval(*FIRST)]
    assert region.measured_minutes == D(770)
    # Under "the larger of the two", the customer is credited the measured 770 minutes.
    declared = [sla.Outage(FIRST[0], FIRST[1], PARTIAL, incident_id=incident.pk)]
    measured = sla_measured.MeasuredResult(D(770), tuple(region.measured), (), ())
    start, end = sla.Period(2026, 10).bounds("US/Pacific")
    got = sla_measured.sourced_downtime(
        declared, measured, POLICY, source=sla_measured.SOURCE_LARGER, start=start, end=end
    )
    assert (got.source, got.downtime_minutes, got.declared_minutes) == ("measured", D(770), D(750))
    assert region_loc.name == region.location


@pytest.mark.django_db
def test_with_prometheus_unreachable_the_gap_is_reported_and_declared_windows_count() -> None:
    stopped = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    incident, _, _ = _incident(stopped, "exact")
    region, zone = reconcile.incident_reconciliation(incident, now=NOW)
    for row in (region, zone):
        assert row.problem.startswith("Measurement unavailable, declared windows used")
        assert row.measured_minutes is None and row.measured == [] and len(row.gaps) == 1
    declared = [sla.Outage(FIRST[0], FIRST[1], PARTIAL)]
    start, end = sla.Period(2026, 10).bounds("US/Pacific")
    got = sla_measured.sourced_downtime(
        declared, None, POLICY, source=sla_measured.SOURCE_MEASURED, start=start, end=end
    )
    assert (got.source, got.downtime_minutes, got.gaps) == ("declared", D(750), (Interval(start, end),))


def _customer(policy_source: str) -> None:
    from tests.credits import builders

    policy = builders.storage_policy(downtime_source=policy_source)
    region = Location.objects.get(name="us-central1")
    builders.customer("Acme", policy=policy, products=[(region_product(), region)], monthly_bill=D(1000))


def region_product() -> Product:
    return Product.objects.get(name="Cloud Storage")


@pytest.mark.django_db
def test_a_larger_of_the_two_policy_credits_the_measured_minutes_and_the_letter_says_so(
    prometheus_url: str,
) -> None:
    from credits import emails, services
    from credits.models import CreditNotice

    _incident(prometheus_url, "early")
    _customer("larger")
    services.credits_compute(period="2026-10", now=NOW)
    notice = CreditNotice.objects.select_related("customer", "policy").get()
    # Declared for a region customer: 750 (region) + 341 (its zone) = 1091; measured
    # 770 (the region from 20 minutes earlier) + 345 (the zone, to the period) = 1115.
    assert (notice.downtime_source, notice.downtime_minutes, notice.measured_minutes) == (
        "measured",
        1115,
        1115,
    )
    # The test data covers 8 October 08:00 to 9 October 20:00 UTC only: the rest of the
    # month is a gap, said so, and filled from declared windows (none there).
    assert notice.measurement_note == "gaps in the measurement"
    _subject, text, _html = emails.render_credit_notice(notice)
    assert "Counted from: our monitoring's error rates (1115 minutes measured)" in " ".join(text.split())


@pytest.mark.django_db
def test_a_measured_policy_with_prometheus_unreachable_counts_the_declared_windows() -> None:
    from credits import emails, services
    from credits.models import CreditNotice

    _incident(f"http://127.0.0.1:{free_port()}", "exact")
    _customer("measured")
    services.credits_compute(period="2026-10", now=NOW)
    notice = CreditNotice.objects.select_related("customer", "policy").get()
    assert (notice.downtime_source, notice.downtime_minutes, notice.measured_minutes) == (
        "declared",
        1091,  # 750 (region) + 341 (its zone)
        None,
    )
    assert notice.measurement_note.startswith("source unavailable (Prometheus unreachable")
    _subject, text, _html = emails.render_credit_notice(notice)
    assert "the impact windows we declared (our monitoring had no data for this month)" in " ".join(
        text.split()
    )


@pytest.mark.django_db
def test_the_reconciliation_page(prometheus_url: str, client: Client) -> None:
    from tests.credits.conftest import finance_user

    incident, _, _ = _incident(prometheus_url, "early")
    url = reverse("console:incident_reconciliation", args=[incident.pk])
    client.force_login(finance_user("fiona"))
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "Measured, not declared: suggested draft incident" in body
    assert "<strong>770 min</strong>" in body and "<strong>750 min</strong>" in body
    client.force_login(User.objects.create_user("pat", is_staff=True))
    assert client.get(url).status_code == 403
