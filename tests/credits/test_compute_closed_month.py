"""Issue 28, finance: the month that just ended is computed on its first day (Celery beat,
and `run_periodic` in the embedded mode), once, for review: nothing is sent."""

from __future__ import annotations

import io
from decimal import Decimal as D

import pytest
from celery import current_app
from celery.schedules import crontab
from django.conf import settings
from django.core.management import call_command
from freezegun import freeze_time

from credits import services
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, NoticeState
from outbox.models import OutboundMessage
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders

pytestmark = pytest.mark.django_db


@pytest.fixture
def october() -> None:
    storage, central = make_product("Cloud Storage"), make_location("us-central1")
    make_incident(
        product=storage, location=central, start=utc(2026, 10, 8, 12, 0), end=utc(2026, 10, 9, 2, 0)
    )
    policy = builders.storage_policy()  # US/Pacific: October ends at 07:00 UTC on 1 November
    builders.customer("Acme", policy=policy, products=[(storage, central)], monthly_bill=D("1000.00"))


def _computed_entries() -> list[CreditAuditEntry]:
    return list(CreditAuditEntry.objects.filter(action=AuditAction.COMPUTED, period="2026-10"))


def test_it_waits_until_the_month_has_ended_in_every_policy_zone(october: None) -> None:
    assert services.credits_compute_closed_month(now=utc(2026, 11, 1, 6, 59)) is None
    assert CreditNotice.objects.count() == 0 and _computed_entries() == []


def test_it_computes_the_past_month_once_and_sends_nothing(october: None) -> None:
    summary = services.credits_compute_closed_month(now=utc(2026, 11, 1, 12, 0))
    assert summary is not None and (summary.period, summary.created) == ("2026-10", 1)
    notice = CreditNotice.objects.get()
    assert (notice.period, notice.state) == ("2026-10", NoticeState.COMPUTED)
    [entry] = _computed_entries()
    assert (entry.actor_label, entry.via) == ("", "beat")
    assert OutboundMessage.objects.count() == 0  # nothing goes out without review

    # A second beat the same day, or the next day, changes and logs nothing.
    assert services.credits_compute_closed_month(now=utc(2026, 11, 1, 12, 0)) is None
    assert services.credits_compute_closed_month(now=utc(2026, 11, 2, 12, 0)) is None
    assert len(_computed_entries()) == 1
    assert CreditNotice.objects.get().computed_at == notice.computed_at


def test_a_computation_before_the_month_ended_does_not_count(october: None) -> None:
    with freeze_time("2026-10-20 18:00:00"):
        services.credits_compute(period="2026-10")  # mid-month, by hand
    summary = services.credits_compute_closed_month(now=utc(2026, 11, 1, 12, 0))
    assert summary is not None and summary.period == "2026-10"
    assert [e.via for e in _computed_entries()] == ["beat", ""]  # latest first


def test_the_beat_runs_it_at_noon_utc_on_the_first(october: None) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["credits-compute-closed-month"]
    assert entry["task"] == "credits.tasks.compute_closed_month"
    assert entry["schedule"] == crontab(minute=0, hour=12, day_of_month=1)
    current_app.loader.import_default_modules()
    with freeze_time("2026-11-01 12:00:00"):
        assert current_app.tasks[entry["task"]].apply().get() == "2026-10: 1 notice(s) for review"
        assert current_app.tasks[entry["task"]].apply().get() == "nothing to compute"


def test_run_periodic_runs_it_in_the_embedded_mode(october: None) -> None:
    out = io.StringIO()
    with freeze_time("2026-11-03 09:00:00"):
        call_command("run_periodic", "--once", stdout=out)
    assert "credits-compute-closed-month: ok" in out.getvalue()
    assert CreditNotice.objects.filter(period="2026-10", state=NoticeState.COMPUTED).count() == 1
