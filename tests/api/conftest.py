"""Fixtures for the API tests: tokens for the personas and a small public/private world."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client

from incidents import services
from incidents.models import Incident, Location, Product
from tests.api.keys import key_for
from tests.builders import approve_report, make_group, make_incident, make_location, make_product, utc


@pytest.fixture
def alice_token(alice: User) -> str:
    return key_for(alice)


@pytest.fixture
def anon() -> Client:
    return Client()


@pytest.fixture
def staff_api(alice_token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {alice_token}")


@pytest.fixture
def bob_token(bob: User) -> str:
    return key_for(bob)


@pytest.fixture
def user_api(bob_token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {bob_token}")


@dataclass
class World:
    gmail: Product
    storage: Product
    internal: Product
    region: Location
    zone: Location
    outage: Incident  # resolved, with a published report
    ongoing: Incident  # open, on Cloud Storage in one zone
    drafted: Incident  # resolved, report still a draft
    hidden: Incident  # not public
    staff_only_product_incident: Incident  # public flag, but only on a staff-only product
    maintenance: Incident  # scheduled


@pytest.fixture
def world(db: None) -> World:
    workspace = make_group("Workspace", position=0)
    gmail = make_product("Gmail", group=workspace, position=1, description="Email for teams.")
    storage = make_product("Cloud Storage", position=2)
    internal = make_product("Billing backend", is_public=False, position=3)
    region = make_location("us-central1")
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=region)

    outage = make_incident(
        title="Gmail unavailable for web users",
        product=gmail,
        start=utc(2009, 9, 1, 19, 45),
        end=utc(2009, 9, 1, 21, 15),
    )
    services.report_save(
        incident=outage,
        summary="Request routers ran **out of headroom**.",
        root_cause="A routine upgrade shifted load onto routers that could not take it.",
    )
    approve_report(outage)
    services.report_publish(incident=outage, published_at=utc(2009, 9, 3, 12, 0))

    ongoing = make_incident(
        title="Elevated write latency in us-central1-b",
        product=storage,
        start=utc(2026, 10, 9, 11, 5),
        level="partial_outage",
        impact="minor",
        location=zone,
    )
    services.incident_post_update(
        incident=ongoing,
        status="monitoring",
        body="A fix is rolling out.",
        display_at=utc(2026, 10, 9, 12, 0),
    )
    drafted = make_incident(
        title="Spam filtering delayed",
        product=gmail,
        start=utc(2026, 1, 24, 13, 2),
        end=utc(2026, 1, 24, 17, 55),
        level="degraded_performance",
        impact="minor",
    )
    services.report_save(incident=drafted, summary="DRAFT-ONLY wording that is not ready.")
    hidden = make_incident(title="Secret staff drill", product=gmail, start=utc(2026, 3, 1), is_public=False)
    staff_only = make_incident(
        title="Billing export stalled", product=internal, start=utc(2026, 4, 1), end=utc(2026, 4, 1, 1)
    )
    maintenance = services.incident_open(
        title="Planned network work",
        kind=Incident.Kind.MAINTENANCE,
        impact="none",
        scheduled_for=utc(2030, 6, 1, 2),
        scheduled_until=utc(2030, 6, 1, 4),
        windows=[
            services.WindowSpec(product=storage, level="under_maintenance", started_at=utc(2030, 6, 1, 2))
        ],
    )
    for incident in (outage, ongoing, drafted, hidden, staff_only):
        incident.refresh_from_db()
    return World(
        gmail, storage, internal, region, zone, outage, ongoing, drafted, hidden, staff_only, maintenance
    )
