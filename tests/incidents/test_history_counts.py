"""The maintained month counts (incidents.history_counts) follow every write that moves
an incident in or out of a month, a product or the public history."""

from __future__ import annotations

from datetime import date

import pytest

from incidents import services
from incidents.history_counts import history_month_counts, history_product_total
from incidents.models import HistoryCount
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def test_it_counts_a_new_incident_in_its_month_and_product() -> None:
    gmail, drive = make_product("Gmail"), make_product("Drive")
    make_incident(title="Gmail down", product=gmail, start=utc(2026, 3, 10, 12))
    make_incident(title="Drive down", product=drive, start=utc(2026, 3, 20, 12))
    make_incident(title="Gmail again", product=gmail, start=utc(2026, 4, 2, 12))
    assert history_month_counts() == [(date(2026, 4, 1), 1), (date(2026, 3, 1), 2)]
    assert history_product_total(gmail) == 2
    assert history_product_total(drive) == 1


def test_it_follows_a_start_moved_to_another_month() -> None:
    gmail = make_product("Gmail")
    incident = make_incident(product=gmail, start=utc(2026, 3, 10, 12), end=utc(2026, 3, 10, 13))
    services.incident_edit(incident=incident, changes={"started_at": utc(2026, 2, 10, 12)})
    assert history_month_counts() == [(date(2026, 2, 1), 1)]
    assert history_product_total(gmail) == 1


def test_it_counts_a_draft_once_published_and_forgets_a_deleted_incident() -> None:
    gmail = make_product("Gmail")
    draft = make_incident(product=gmail, start=utc(2026, 3, 10, 12), is_public=False)
    assert history_month_counts() == []
    services.incident_publish(incident=draft)
    assert history_month_counts() == [(date(2026, 3, 1), 1)]
    draft.refresh_from_db()
    services.incident_delete(incident=draft)
    assert history_month_counts() == []
    assert history_product_total(gmail) == 0


def test_it_recounts_everything_when_a_product_is_hidden() -> None:
    gmail, hidden = make_product("Gmail"), make_product("Internal")
    make_incident(title="Only internal", product=hidden, start=utc(2026, 3, 10, 12))
    make_incident(title="Gmail down", product=gmail, start=utc(2026, 3, 11, 12))
    assert history_month_counts() == [(date(2026, 3, 1), 2)]
    services.product_edit(product=hidden, changes={"is_public": False})
    assert history_month_counts() == [(date(2026, 3, 1), 1)]


def test_it_rebuilds_for_a_new_display_zone(settings) -> None:  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    # 1 March 03:00 UTC is still February in Los Angeles, March in Paris.
    make_incident(product=gmail, start=utc(2026, 3, 1, 3))
    settings.DISPLAY_TIME_ZONE = "America/Los_Angeles"
    HistoryCount.objects.all().delete()
    assert history_month_counts() == [(date(2026, 2, 1), 1)]
    settings.DISPLAY_TIME_ZONE = "Europe/Paris"
    assert history_month_counts() == [(date(2026, 3, 1), 1)]
