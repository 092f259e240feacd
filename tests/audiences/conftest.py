"""A small world for the audience pages: Gmail (public) and Cloud Storage in us-central1,
a staff-only product, customers, an internal page and two customer pages."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client

from audiences import services
from audiences.models import Page
from audiences.selectors import SESSION_CUSTOMER, SESSION_EMAIL
from credits import services as credit_services
from credits.models import Customer
from incidents.models import Incident, Location, Product
from tests.builders import make_incident, make_location, make_product, utc


@dataclass
class World:
    gmail: Product
    storage: Product
    vpn: Product
    us_central1: Location
    europe: Location
    gmail_incident: Incident
    storage_incident: Incident
    europe_incident: Incident
    storage_customer: Customer
    gmail_customer: Customer


@dataclass
class Pages:
    internal: Page
    storage: Page
    gmail: Page


@pytest.fixture
def world(db: None) -> World:
    gmail = make_product("Gmail")
    storage = make_product("Cloud Storage", slug="cloud-storage", position=1)
    vpn = make_product("Corporate VPN", slug="vpn", is_public=False, position=2)
    us_central1 = make_location("us-central1")
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=us_central1)
    europe = make_location("europe-west1")
    return World(
        gmail=gmail,
        storage=storage,
        vpn=vpn,
        us_central1=us_central1,
        europe=europe,
        gmail_incident=make_incident(
            title="Gmail delays", product=gmail, start=utc(2026, 11, 20, 10), end=utc(2026, 11, 20, 11)
        ),
        storage_incident=make_incident(
            title="Cloud Storage write errors",
            product=storage,
            location=zone,
            start=utc(2026, 11, 21, 8),
            end=utc(2026, 11, 21, 9, 30),
        ),
        europe_incident=make_incident(
            title="Cloud Storage latency in Belgium",
            product=storage,
            location=europe,
            start=utc(2026, 11, 22, 8),
            end=utc(2026, 11, 22, 9),
        ),
        storage_customer=credit_services.customer_create(
            name="Tailspin", billing_emails=["ap@tailspin.example"]
        ),
        gmail_customer=credit_services.customer_create(
            name="Northwind", billing_emails=["ap@northwind.example"]
        ),
    )


def make_pages(world: World) -> Pages:
    return Pages(
        internal=services.page_save(
            actor=None,
            slug="internal",
            title="Secret internal page",
            visibility=Page.Visibility.INTERNAL,
            products=[world.gmail, world.storage, world.vpn],
        ),
        storage=services.page_save(
            actor=None,
            slug="tailspin",
            title="Tailspin private page",
            visibility=Page.Visibility.AUDIENCE,
            products=[world.storage],
            locations=[world.us_central1],
            customers=[world.storage_customer],
        ),
        gmail=services.page_save(
            actor=None,
            slug="northwind",
            title="Northwind private page",
            visibility=Page.Visibility.AUDIENCE,
            products=[world.gmail],
            customers=[world.gmail_customer],
        ),
    )


@pytest.fixture
def pages(world: World) -> Pages:
    return make_pages(world)


def customer_client(customer: Customer) -> Client:
    """A client whose session says a contact of `customer` signed in (the portal's keys)."""
    client = Client()
    session = client.session
    session[SESSION_CUSTOMER] = customer.pk
    session[SESSION_EMAIL] = customer.billing_emails[0]
    session.save()
    return client
