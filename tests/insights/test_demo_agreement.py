"""One source of truth, on the demo: every surface gives the same figures from the same
impact windows (the Cloud Storage incident of October 2026 is 18 h 11 min everywhere)."""

from __future__ import annotations

import csv
import dataclasses
import io
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from credits import selectors as credit_selectors
from credits import services as credit_services
from credits import sla
from credits.models import CreditNotice, Customer
from incidents import uptime
from incidents.models import Incident
from insights import metrics, selectors
from public_site import pages as public_pages

pytestmark = pytest.mark.django_db

TODAY = "2026-11-29 20:00:00"
STORAGE_MINUTES = Decimal(18 * 60 + 11)


@pytest.fixture
def demo() -> None:
    with freeze_time(TODAY):
        call_command("load_demo", stdout=io.StringIO())


def storage_incident() -> Incident:
    return (
        Incident.objects.filter(
            windows__product__slug="cloud-storage", started_at__year=2026, started_at__month=10
        )
        .distinct()
        .get()
    )


def test_the_storage_incident_is_18_h_11_min_on_every_surface(demo: None, staff_client: Client) -> None:
    incident = storage_incident()
    with freeze_time(TODAY):
        now = timezone.now()
        html = staff_client.get(f"/incidents/{incident.public_id}/").content.decode()
        choices = selectors.scope_choices()
        page = selectors.insights_page(
            scope=choices.resolve("product:cloud-storage"),  # type: ignore[arg-type]
            granularity=metrics.MONTH,
            last=date(2026, 11, 1),
            now=now,
        )
        report = selectors.product_uptime_report(slug="cloud-storage", now=now)
        insights_csv = staff_client.get("/manage/insights/incidents.csv?scope=product:cloud-storage").content
        report_csv = Client().get("/products/cloud-storage/uptime.csv").content
        report_json = Client().get("/api/v1/products/cloud-storage/uptime/").json()
        credit_services.credits_compute(period="2026-10", now=now)

    # The incident page.
    assert "<strong data-total-duration>18 h 11 min</strong>" in html
    # The insights row and its CSV.
    row = page.incident(incident.pk)
    assert row is not None
    assert row.duration == timedelta(hours=18, minutes=11)
    assert row.weighted_downtime_minutes == STORAGE_MINUTES * Decimal("0.3")
    csv_row = next(
        r for r in csv.DictReader(io.StringIO(insights_csv.decode())) if r["incident"] == incident.public_id
    )
    assert csv_row["duration_minutes"] == "1091.00"
    assert csv_row["weighted_downtime_minutes"] == "327.30"
    # The October summary of the insights page and the monthly report.
    october = next(s for s in page.summaries if s.period.label == "2026-10")
    assert october.downtime.total == timedelta(hours=18, minutes=11)
    month = next(m for m in report.months if m.period.label == "2026-10")
    assert month.downtime.total == timedelta(hours=18, minutes=11)
    assert month.downtime.weighted_minutes == Decimal("327.3")
    assert october.downtime.uptime == month.downtime.uptime
    report_row = next(r for r in csv.DictReader(io.StringIO(report_csv.decode())) if r["month"] == "2026-10")
    assert report_row["total_downtime_minutes"] == "1091.00"
    json_month = next(m for m in report_json["months"] if m["month"] == "2026-10")
    assert json_month["total_downtime_minutes"] == "1091.00"
    assert json_month["uptime_percent"] == str(month.downtime.uptime.percent) == report_row["uptime_percent"]
    # The SLA credit of a customer in the recurrence's zone (partial outage weighs 1 there).
    wide_world = Customer.objects.get(name="Wide World Importers")
    notice = CreditNotice.objects.get(customer=wide_world, period="2026-10")
    assert notice.downtime_minutes == STORAGE_MINUTES
    assert set(notice.incidents.values_list("pk", flat=True)) == {incident.pk}


def test_the_90_day_figure_the_report_and_the_sla_maths_agree(demo: None) -> None:
    with freeze_time(TODAY):
        now = timezone.now()
        status = public_pages.status_page(now=now)
        report = selectors.product_uptime_report(slug="cloud-storage", now=now)
        html = Client().get("/products/cloud-storage/uptime/").content.decode()
        api = Client().get("/api/v1/products/cloud-storage/uptime/").json()
        start, end = sla.Period(2026, 10).bounds("US/Pacific")
        windows = credit_selectors.windows_for_period(start=start, end=end)
    row = next(r for r in status.rows if r.product.slug == "cloud-storage")
    # The status page's 90-day bars and the report's 90 days: one figure.
    assert report.last_days.uptime == row.uptime
    assert f"<strong data-uptime-90>{row.uptime.percent}&nbsp;%</strong>" in html
    assert api["last_90_days"]["uptime_percent"] == str(row.uptime.percent)
    # The SLA maths (credits/sla.py, its own implementation) under the display weights, on
    # the same windows, gives the report's October downtime to the minute.
    display = sla.Policy(
        target=Decimal("99.9"),
        time_zone="US/Pacific",
        weights=(
            (uptime.MAJOR_OUTAGE, Decimal(1)),
            (uptime.PARTIAL_OUTAGE, Decimal("0.3")),
        ),
        tiers=(),
        min_downtime_minutes=0,
    )
    storage = [w.outage for w in windows if w.product_id == report.product.pk]
    result = sla.compute(storage, display, sla.Period(2026, 10), now=now)
    month = next(m for m in report.months if m.period.label == "2026-10")
    assert result.downtime_minutes == month.downtime.weighted_minutes == Decimal("327.3")
    assert result.period_minutes == month.downtime.uptime.period_minutes
    assert sla.truncate_percent(result.uptime_percent, 2) == month.downtime.uptime.percent
    # And the 90-day downtime is the October incident's plus the rest of the 90 days.
    assert row.uptime.downtime_minutes == report.last_days.weighted_minutes


def test_the_insights_figures_on_the_seed_incidents(demo: None) -> None:
    with freeze_time(TODAY):
        now = timezone.now()
        page = selectors.insights_page(
            scope=selectors.scope_choices().resolve("all"),  # type: ignore[arg-type]
            granularity=metrics.MONTH,
            last=date(2026, 11, 1),
            now=now,
            every_row=True,
        )
    rows = {r.facts.title: r for r in page.rows or ()}
    gmail = rows["Gmail spam classification failures and delivery delays"]
    assert gmail.time_to_detect == timedelta(minutes=10)
    assert gmail.time_to_resolve == timedelta(hours=4, minutes=53)
    storage = rows["Cloud Storage elevated write latency and errors in us-central1"]
    assert storage.time_to_detect == timedelta(minutes=50)
    assert storage.time_to_resolve == timedelta(hours=29, minutes=46)
    # The recent small incidents are detected 4 minutes in; the two 2026 seeds take longer.
    assert page.response.detect.median == timedelta(minutes=4)
    assert page.response.detect.p90 == timedelta(minutes=50)
    assert page.response.detect.p90_incident_id == storage.facts.incident_id
    # Maintenance is listed apart: the upcoming BigQuery window is scheduled in December.
    assert page.incident_count == len([r for r in page.rows or () if not r.facts.is_maintenance])
    assert all(not r.facts.is_maintenance for r in page.listed)
    january = next(s for s in page.summaries if s.period.label == "2026-01")
    assert january.level_count(uptime.PARTIAL_OUTAGE) == 1
    october = next(s for s in page.summaries if s.period.label == "2026-10")
    assert october.incidents == 3  # Cloud Storage, BigQuery (27 Oct), the staff-only Calendar one (13 Oct)
    # The staff view includes the staff-only Calendar incident; the public report never does.
    assert "Calendar invitation emails delayed" in rows


@pytest.mark.usefixtures("postgres")
def test_the_database_path_gives_the_demo_figures_of_the_python_path(demo: None) -> None:
    """On PostgreSQL the page's figures come from SQL (`insights.aggregates`); on the demo
    they are those of the pure maths, for every scope and granularity."""
    with freeze_time(TODAY):
        now = timezone.now()
        choices = selectors.scope_choices()
        for key, _ in choices.options():
            for granularity in metrics.GRANULARITIES:
                scope = choices.resolve(key)
                assert scope is not None
                fast = selectors.insights_page_sql(
                    scope=scope, granularity=granularity, last=now.date(), now=now
                )
                slow = selectors.insights_page_python(
                    scope=scope, granularity=granularity, last=now.date(), now=now
                )
                for field in dataclasses.fields(selectors.InsightsPage):
                    if field.name != "rows":
                        assert repr(getattr(fast, field.name)) == repr(getattr(slow, field.name)), (
                            key,
                            field.name,
                        )
                if key == "product:cloud-storage":
                    october = next(s for s in fast.summaries if s.period.label in ("2026-10", "2026 Q4"))
                    assert october.downtime.total == timedelta(hours=18, minutes=11)
