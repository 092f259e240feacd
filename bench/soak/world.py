"""The soak's data: a fresh database with products, locations, subscribers (email and
webhook), a staff user with a write API key, SLA customers and closed months with outages
to credit. The driver process talks to PostgreSQL directly (not through the fault proxy):
it sets the world up and reads the truth at the end."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D
from typing import Any

from bench.soak.stack import PY, ROOT, Stack

# Closed months the credit script computes and sends, each with an outage to credit.
PERIODS = ("2026-09", "2026-10", "2026-11")


@dataclass
class World:
    api_key: str
    products: list[str]
    locations: list[str]


def recreate_database(stack: Stack) -> None:
    pg = stack.pg
    subprocess.run(
        ["psql", "-h", pg["host"], "-p", pg["port"], "-U", pg["user"], "-d", "postgres", "-qc",
         f"DROP DATABASE IF EXISTS {pg['db']} WITH (FORCE)", "-c", f"CREATE DATABASE {pg['db']}"],
        check=True,
    )  # fmt: skip


def setup_django(stack: Stack) -> None:
    """Django in this process, on the direct database URL, with the app's settings."""
    pg = stack.pg
    direct = {**stack.env, "DATABASE_URL": f"postgres://{pg['user']}@{pg['host']}:{pg['port']}/{pg['db']}"}
    subprocess.run([str(PY), "manage.py", "migrate", "-v0"], cwd=ROOT, env=direct, check=True)
    os.environ.update(direct)
    os.environ["DJANGO_SETTINGS_MODULE"] = "statuspage.settings"
    # The driver queues nothing itself; what it reads and writes goes straight to SQL.
    os.environ["DB_STATEMENT_TIMEOUT_MS"] = "600000"
    import django

    django.setup()


def _past_outages(products: list[Any]) -> None:
    from incidents import services as incidents
    from incidents.models import ImpactWindow

    for n, period in enumerate(PERIODS):
        year, month = map(int, period.split("-"))
        start = datetime(year, month, 10 + n, 9, 0, tzinfo=UTC)
        incident = incidents.incident_open(
            title=f"Past outage {period}",
            impact="major",
            started_at=start,
            windows=[
                incidents.WindowSpec(
                    product=products[n % len(products)],
                    level=ImpactWindow.Level.MAJOR_OUTAGE,
                    started_at=start,
                )
            ],
            notify=False,
        )
        incidents.incident_resolve(incident=incident, resolved_at=start + timedelta(hours=3), notify=False)


def _customers(products: list[Any], count: int) -> None:
    from credits import services as credits

    policy = credits.policy_create(
        name="Soak", target=D("99.9"), tiers=[(D("99.9"), D(3)), (D("99.0"), D(7))], min_downtime_minutes=10
    )
    for i in range(count):
        credits.customer_create(
            name=f"Soak customer {i:03d}",
            billing_emails=[f"billing{i}@customer{i}.example"],
            policy=policy,
            term_end_date=date(2027, 12, 31),
            monthly_bill=D("1000.00"),
            entitlements=[{"product": products[i % len(products)]}],
        )


def build_world(stack: Stack, *, subscribers: int, customers: int) -> World:
    from django.contrib.auth import get_user_model

    from api.services import api_key_create
    from incidents.models import Location, Product
    from subscriptions.services import subscriber_staff_create

    products = [
        Product.objects.create(name=f"Soak product {n}", slug=f"soak-{n}", is_public=True) for n in range(4)
    ]
    locations = [
        Location.objects.create(name=f"soak-region-{n}", kind=Location.Kind.REGION) for n in range(2)
    ]
    for n in range(subscribers):
        subscriber_staff_create(actor=None, email=f"reader{n}@soak.example", confirmed=True)
    for n in range(2):
        subscriber_staff_create(
            actor=None,
            email=f"hook{n}@soak.example",
            kind="webhook",
            url=f"http://127.0.0.1:{stack.webhooks.port}/hook/{n}",
            confirmed=True,
        )
    _past_outages(products)
    _customers(products, customers)
    user = get_user_model().objects.create_user(
        username="soak", email="soak@soak.example", is_staff=True, is_superuser=True
    )
    key = api_key_create(user=user, name="soak", scope="write").raw
    return World(api_key=key, products=[p.slug for p in products], locations=[loc.name for loc in locations])
