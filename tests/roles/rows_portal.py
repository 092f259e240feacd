"""Role-matrix rows of the customer portal room: who may sign in for a customer is
managed on the console page /manage/portal/ (`portal.access`)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from credits.models import Customer
from portal.models import PortalAccess
from tests.roles.matrix import Row


def _setup() -> None:
    customer = Customer.objects.create(name="Acme")
    PortalAccess.objects.create(customer=customer, domain="acme.example")


def _add(client: Client, user: User) -> int:
    customer = Customer.objects.get(name="Acme")
    return client.post("/manage/portal/", {"customer": customer.pk, "email": "cfo@other.example"}).status_code


def _remove(client: Client, user: User) -> int:
    row = PortalAccess.objects.get(domain="acme.example")
    return client.post(f"/manage/portal/{row.pk}/remove/").status_code


def _read(client: Client, user: User) -> int:
    return client.get("/manage/portal/").status_code


ROWS = [
    Row("portal.access", "console", "GET /manage/portal/", _read, setup=_setup),
    Row("portal.access", "console", "POST /manage/portal/ (add a contact)", _add, setup=_setup),
    Row("portal.access", "console", "POST /manage/portal/<id>/remove/", _remove, setup=_setup),
]
