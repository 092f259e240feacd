"""Role matrix rows of the measurements room: SLI sources in the console (`sli.manage`)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from incidents.models import Product
from measurements.models import SliSource
from tests.builders import make_product
from tests.roles.matrix import Row


def _setup() -> None:
    make_product("Cloud Storage", slug="cloud-storage")


def _list(client: Client, user: User) -> int:
    return client.get("/manage/sli/").status_code


def _create(client: Client, user: User) -> int:
    data = {
        "product": str(Product.objects.get(slug="cloud-storage").pk),
        "base_url": "http://127.0.0.1:9090",
        "kind": "counts",
        "errors_query": "sum(increase(errors_total{selector}[{window}]))",
        "valid_query": "sum(increase(requests_total{selector}[{window}]))",
        "label_selector": 'location="us-central1"',
        "enabled": "on",
    }
    response = client.post("/manage/sli/new/", data)
    if response.status_code == 403:
        return 403
    return response.status_code if SliSource.objects.exists() else 400


def _delete(client: Client, user: User) -> int:
    source = SliSource.objects.create(
        product=Product.objects.get(slug="cloud-storage"), base_url="http://127.0.0.1:9090"
    )
    response = client.post(f"/manage/sli/{source.pk}/delete/")
    if response.status_code == 403:
        return 403
    return response.status_code if not SliSource.objects.filter(pk=source.pk).exists() else 400


ROWS: list[Row] = [
    Row("sli.manage", "console", "GET /manage/sli/", _list, setup=_setup),
    Row("sli.manage", "console", "POST /manage/sli/new/", _create, setup=_setup),
    Row("sli.manage", "console", "POST /manage/sli/<id>/delete/", _delete, setup=_setup),
]
