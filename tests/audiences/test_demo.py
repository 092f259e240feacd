"""The demo's audience pages: an internal page and two customer pages, loaded once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from freezegun import freeze_time

from audiences.models import Page, UpdateWords
from credits.models import Customer
from demo.incidents import GCS_TITLE
from tests.audiences.conftest import customer_client

pytestmark = pytest.mark.django_db


@freeze_time("2026-11-29T14:00:00Z")
def test_it_gives_each_demo_customer_their_own_page() -> None:
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "/p/tailspin-toys/" in out.getvalue()
    assert set(Page.objects.values_list("slug", "visibility")) == {
        ("internal", "internal"),
        ("tailspin-toys", "audience"),
        ("northwind-traders", "audience"),
    }
    storage = customer_client(Customer.objects.get(name="Tailspin Toys")).get("/p/tailspin-toys/")
    body = storage.content.decode()
    # The us-central1 customer sees the Cloud Storage incident, with its 18 h 11 min.
    assert storage.status_code == 200 and GCS_TITLE in body and "18 h 11 min" in body
    assert "Your buckets in us-central1" in body
    gmail = customer_client(Customer.objects.get(name="Northwind Traders")).get("/p/northwind-traders/")
    assert gmail.status_code == 200 and GCS_TITLE not in gmail.content.decode()
    staff = Client()
    staff.force_login(User.objects.get(username="staff"))
    internal = staff.get("/p/internal/").content.decode()
    assert GCS_TITLE in internal and "Metadata shard rebalancing" in internal
    assert Client().get("/p/internal/").status_code == 404
    # A second run changes nothing.
    call_command("load_demo", stdout=StringIO())
    assert Page.objects.count() == 3 and UpdateWords.objects.count() == 1
