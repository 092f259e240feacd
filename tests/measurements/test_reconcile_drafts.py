"""Where the measurement shows impact nobody declared: the reconciliation suggests a
draft (a new draft incident beside a public incident, a draft window on a draft), made
by a button through the incidents services and never published; and a product measured
down in a month with no declared window at all is still credited under a measuring
policy (hand-computed)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from credits import emails, reconcile, services, suggested_drafts
from credits.models import CreditNotice
from incidents.models import ImpactWindow, Incident, Location, Product
from measurements.models import SliSource
from tests.builders import make_incident, make_location, make_product
from tests.credits import builders
from tests.measurements.prom import FIRST, run_prometheus

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
EARLY = FIRST[0] - timedelta(minutes=20)
PARTIAL = ImpactWindow.Level.PARTIAL_OUTAGE


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from run_prometheus(Path(tmp_path_factory.mktemp("prometheus")))


def _sources(base_url: str, variant: str = "early") -> tuple[Location, Location]:
    gcs = make_product("Cloud Storage")
    region = make_location("us-central1")
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=region)
    for location in (region, zone):
        SliSource.objects.create(
            product=gcs,
            location=location,
            base_url=base_url,
            errors_query="sum(increase(sli_errors_total{selector}[{window}]))",
            valid_query="sum(increase(sli_requests_total{selector}[{window}]))",
            label_selector=f'location="{location.name}",variant="{variant}"',
        )
    return region, zone


def _incident(base_url: str, *, is_public: bool = True) -> Incident:
    region, _zone = _sources(base_url)
    return make_incident(
        title="Cloud Storage elevated errors in us-central1",
        product=region_product(),
        location=region,
        start=FIRST[0],
        end=FIRST[1],
        level=PARTIAL,
        is_public=is_public,
    )


def region_product() -> Product:
    return Product.objects.get(name="Cloud Storage")


def _member(*roles: str) -> Client:
    user = User.objects.create_user("m-" + "-".join(r.lower() for r in roles), is_staff=True)
    for role in roles:
        user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


def _post(incident: Incident, start: datetime, end: datetime) -> dict[str, str]:
    region = Location.objects.get(name="us-central1")
    return {
        "product": str(region_product().pk),
        "location": str(region.pk),
        "start": start.isoformat(),
        "end": end.isoformat(),
    }


@pytest.mark.django_db
def test_the_suggestions_of_a_public_incident_are_draft_incidents(prometheus_url: str) -> None:
    incident = _incident(prometheus_url)
    (row,) = reconcile.incident_reconciliation(incident, now=NOW)
    (suggestion,) = suggested_drafts.for_row(incident, row)
    assert (suggestion.start, suggestion.end, suggestion.kind, suggestion.made) == (
        EARLY,
        FIRST[0],
        suggested_drafts.KIND_INCIDENT,
        "",
    )
    assert suggestion.title == "Measured impact not declared: Cloud Storage in us-central1"


@pytest.mark.django_db
def test_the_button_makes_one_unpublished_draft_incident(prometheus_url: str) -> None:
    incident = _incident(prometheus_url)
    client = _member("Administrator")
    url = reverse("console:incident_reconciliation", args=[incident.pk])
    page = client.get(url).content.decode()
    assert "Measured, not declared: suggested draft incident" in page and "Make a draft incident" in page
    made = client.post(
        reverse("console:suggested_draft", args=[incident.pk]), _post(incident, EARLY, FIRST[0])
    )
    draft = Incident.objects.exclude(pk=incident.pk).get()
    assert made["Location"] == reverse("console:incident", args=[draft.public_id])
    assert not draft.is_public and draft.title == "Measured impact not declared: Cloud Storage in us-central1"
    window = draft.windows.get()
    assert (window.started_at, window.ended_at, window.level, window.location_id) == (
        EARLY,
        FIRST[0],
        PARTIAL,
        Location.objects.get(name="us-central1").pk,
    )
    assert incident.public_id in draft.internal_notes
    # Over already: resolved at the measured end, the body in UTC.
    assert draft.resolved_at == FIRST[0]
    opened = draft.updates.order_by("id")[0]
    assert "measured from 2026-10-08 10:40 to 2026-10-08 11:00 UTC" in opened.body
    # The public incident is untouched; a second click makes nothing new.
    assert incident.windows.count() == 1 and Incident.objects.get(pk=incident.pk).is_public
    client.post(reverse("console:suggested_draft", args=[incident.pk]), _post(incident, EARLY, FIRST[0]))
    assert Incident.objects.count() == 2
    again = client.get(url).content.decode()
    assert "Draft made (not published)" in again and "Make a draft incident" not in again


@pytest.mark.django_db
def test_a_draft_incident_gets_a_draft_window(prometheus_url: str) -> None:
    incident = _incident(prometheus_url, is_public=False)
    client = _member("Administrator")
    assert (
        "Add as a draft window"
        in client.get(reverse("console:incident_reconciliation", args=[incident.pk])).content.decode()
    )
    client.post(reverse("console:suggested_draft", args=[incident.pk]), _post(incident, EARLY, FIRST[0]))
    assert Incident.objects.count() == 1
    incident.refresh_from_db()
    assert not incident.is_public
    assert sorted((w.started_at, w.ended_at) for w in incident.windows.all()) == [(EARLY, FIRST[0]), FIRST]
    # Declared now: the row suggests nothing more.
    (row,) = reconcile.incident_reconciliation(incident, now=NOW)
    assert row.undeclared == [] and suggested_drafts.for_row(incident, row) == []


@pytest.mark.django_db
def test_a_made_up_or_stale_suggestion_changes_nothing(prometheus_url: str) -> None:
    incident = _incident(prometheus_url)
    client = _member("Administrator")
    url = reverse("console:suggested_draft", args=[incident.pk])
    shifted = client.post(url, _post(incident, EARLY - timedelta(hours=3), FIRST[0]), follow=True)
    assert "This suggestion no longer stands" in shifted.content.decode()
    garbage = client.post(url, {"product": "x", "start": "yesterday"}, follow=True)
    assert "That suggestion could not be read" in garbage.content.decode()
    assert Incident.objects.count() == 1 and ImpactWindow.objects.count() == 1


@pytest.mark.django_db
def test_finance_sees_the_suggestion_but_may_not_declare_it(prometheus_url: str) -> None:
    incident = _incident(prometheus_url)
    client = _member("Finance")
    page = client.get(reverse("console:incident_reconciliation", args=[incident.pk])).content.decode()
    assert "suggested draft incident" in page and "Make a draft incident" not in page
    refused = client.post(
        reverse("console:suggested_draft", args=[incident.pk]), _post(incident, EARLY, FIRST[0])
    )
    assert refused.status_code == 403
    assert Incident.objects.count() == 1
    assert (
        _member("Responder")
        .post(reverse("console:suggested_draft", args=[incident.pk]), _post(incident, EARLY, FIRST[0]))
        .status_code
        == 403
    )  # may declare, but not read the reconciliation
    assert Incident.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("source", ["measured", "larger"])
def test_measured_downtime_with_no_declared_window_in_the_month_is_credited(
    prometheus_url: str, source: str
) -> None:
    region, _zone = _sources(prometheus_url)
    policy = builders.storage_policy(downtime_source=source)
    builders.customer("Acme", policy=policy, products=[(region_product(), region)], monthly_bill=D(1000))
    assert not ImpactWindow.objects.exists()
    services.credits_compute(period="2026-10", now=NOW)
    notice = CreditNotice.objects.get()
    # By hand: the region measured down 04:00-16:30 PDT on 8 October from 20 minutes
    # early (770 min), its zone 04:05-09:50 PDT on 9 October (345 min, to the period):
    # 1115 min of October's 31 x 1440 = 44640 in US/Pacific. Uptime 43525 / 44640 =
    # 97.5022 %, below 99.0 and above 95.0: the 25 % tier, 250.00 of a 1000 bill.
    assert (notice.downtime_source, notice.downtime_minutes, notice.measured_minutes) == (
        "measured",
        1115,
        1115,
    )
    assert notice.period_minutes == D(44640)
    assert notice.uptime_percent == D("97.5022")
    assert (notice.credit, notice.credit_amount) == (D("25.00"), D("250.00"))
    assert list(notice.incidents.all()) == []
    _subject, text, _html = emails.render_credit_notice(notice)
    assert "1115 minutes measured" in " ".join(text.split())


@pytest.mark.django_db
def test_a_declared_policy_owes_nothing_without_declared_windows(prometheus_url: str) -> None:
    region, _zone = _sources(prometheus_url)
    policy = builders.storage_policy()
    builders.customer("Acme", policy=policy, products=[(region_product(), region)], monthly_bill=D(1000))
    summary = services.credits_compute(period="2026-10", now=NOW)
    assert summary.customers_considered == 0 and not CreditNotice.objects.exists()
