"""Role matrix rows of the upstream room: providers and dependencies (`upstream.manage`),
and an incident's cause (`incident.edit`), all through the admin."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from incidents import services as incidents
from incidents.models import Incident, Product
from tests.builders import make_product
from tests.roles.matrix import Row
from upstream import services
from upstream.models import Dependency, IncidentCause, Provider


def _setup() -> None:
    gmail = make_product("Gmail")
    storage = make_product("Cloud Storage", slug="cloud-storage")
    services.dependency_save(product=gmail, on_product=storage)
    incidents.incident_open(title="Gmail slow", body="Investigating.")


def _add_provider(client: Client, user: User) -> int:
    data = {
        "name": "Example Cloud",
        "url": "http://127.0.0.1:9/incidents.json",
        "kind": "google",
        "poll_interval_seconds": "300",
        "position": "0",
    }
    response = client.post("/admin/upstream/provider/add/", data)
    if response.status_code == 403:
        return 403
    return response.status_code if Provider.objects.filter(name="Example Cloud").exists() else 400


def _add_dependency(client: Client, user: User) -> int:
    data = {
        "product": str(Product.objects.get(slug="cloud-storage").pk),
        "on_product": str(Product.objects.get(slug="gmail").pk),
        "level": "partial_outage",
    }
    response = client.post("/admin/upstream/dependency/add/", data)
    if response.status_code == 403:
        return 403
    return response.status_code if Dependency.objects.count() == 2 else 400


def _add_cause(client: Client, user: User) -> int:
    data = {"incident": str(Incident.objects.get().pk), "dependency": str(Dependency.objects.get().pk)}
    response = client.post("/admin/upstream/incidentcause/add/", data)
    if response.status_code == 403:
        return 403
    return response.status_code if IncidentCause.objects.exists() else 400


ROWS: list[Row] = [
    Row("upstream.manage", "admin", "POST /admin/upstream/provider/add/", _add_provider, setup=_setup),
    Row("upstream.manage", "admin", "POST /admin/upstream/dependency/add/", _add_dependency, setup=_setup),
    Row("incident.edit", "admin", "POST /admin/upstream/incidentcause/add/", _add_cause, setup=_setup),
]
