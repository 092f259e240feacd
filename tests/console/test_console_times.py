"""Times in messages and tables staff read in the console are in the display zone, named."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal as D
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from freezegun import freeze_time

from api import services as api_services
from credits.models import CreditNotice
from credits.services import credits_compute
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders
from tests.credits.conftest import finance_user

pytestmark = pytest.mark.django_db

NOW = utc(2026, 11, 29, 20, 0)  # 12:00 PST


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_four_eyes_refusal_names_the_preparing_time_in_the_display_zone(settings: Any) -> None:
    settings.CREDITS_SECOND_APPROVER_ABOVE = D("100")
    gcs = make_product("Cloud Storage")
    central = make_location("us-central1")
    make_incident(product=gcs, location=central, start=utc(2026, 10, 8, 12), end=utc(2026, 10, 8, 20))
    policy = builders.storage_policy(claim_window_days=30)
    builders.customer("Acme", policy=policy, products=[(gcs, central)], monthly_bill=D("1000.00"))
    credits_compute(period="2026-10")
    notice = CreditNotice.objects.get()
    fiona = _client(finance_user("fiona"))
    with freeze_time(utc(2026, 11, 2, 17, 30)):
        token = fiona.get(f"/manage/credits/confirm/?ids={notice.pk}").context["plan"].token
        fiona.post("/manage/credits/send/", {"confirmation": token})
        refused = fiona.post("/manage/credits/send/", {"confirmation": token})
    assert refused.status_code == 403
    # Prepared at 17:30 UTC: 09:30 in US/Pacific, which the console works in.
    assert "You prepared this send (2026-11-02 09:30 PST)" in refused.content.decode()


def test_the_insights_incident_table_shows_starts_in_the_display_zone(staff_client: Client) -> None:
    start = NOW - timedelta(days=3)  # 26 Nov 2026, 20:00 UTC
    make_incident(
        title="Gmail errors", product=make_product("Gmail"), start=start, end=start + timedelta(hours=1)
    )
    with freeze_time(NOW):
        html = staff_client.get("/manage/insights/").content.decode()
    assert "2026-11-26 12:00 PST" in html
    assert "2026-11-26 20:00 UTC" not in html


def test_the_api_keys_page_shows_times_in_the_display_zone(staff_client: Client, alice: User) -> None:
    with freeze_time(utc(2026, 11, 2, 17, 30)):
        api_services.api_key_create(user=alice, name="deploy bot", scope="read", actor=alice)
    html = staff_client.get("/api/keys/").content.decode()
    assert "2 Nov, 09:30 PST" in html
