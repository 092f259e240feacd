"""The staff-only subscribers resource: auth matrix, shape, filters, no secrets."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from incidents.models import Product
from subscriptions.models import Subscriber
from tests.builders import make_product

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscribers/"


@pytest.fixture
def subscribers() -> dict[str, Subscriber]:
    gmail = make_product("Gmail")
    make_product("Cloud Storage")
    confirmed = Subscriber.objects.create(
        email="ops@example.com", all_products=False, confirmed_at=timezone.now()
    )
    confirmed.products.set([gmail])
    pending = Subscriber.objects.create(email="new@example.com")
    hook = Subscriber.objects.create(
        kind="webhook",
        email="owner@example.com",
        url="https://hooks.example.com/status",
        confirmed_at=timezone.now(),
    )
    return {"confirmed": confirmed, "pending": pending, "hook": hook}


def test_it_refuses_anonymous_callers(anon: Client, subscribers: dict[str, Subscriber]) -> None:
    response = anon.get(URL)
    assert response.status_code == 401
    assert "ops@example.com" not in response.content.decode()
    assert anon.get(f"{URL}{subscribers['confirmed'].pk}/").status_code == 401


def test_it_refuses_non_staff_tokens(user_api: Client, subscribers: dict[str, Subscriber]) -> None:
    response = user_api.get(URL)
    assert response.status_code == 403
    assert "ops@example.com" not in response.content.decode()


def test_it_lists_subscribers_for_staff_without_tokens_or_secrets(
    staff_api: Client, subscribers: dict[str, Subscriber]
) -> None:
    response = staff_api.get(URL)
    assert response.status_code == 200
    results = response.json()["results"]
    assert {r["email"] for r in results} == {"ops@example.com", "new@example.com", "owner@example.com"}
    body = response.content.decode()
    for subscriber in subscribers.values():
        assert subscriber.token not in body
        assert subscriber.secret not in body
    ops = next(r for r in results if r["email"] == "ops@example.com")
    assert ops["products"] == ["gmail"]
    assert ops["confirmed"] is True


def test_it_filters_by_kind_confirmation_and_product(
    staff_api: Client, subscribers: dict[str, Subscriber]
) -> None:
    def emails(query: str) -> set[str]:
        response = staff_api.get(URL + query)
        assert response.status_code == 200
        return {r["email"] for r in response.json()["results"]}

    assert emails("?kind=webhook") == {"owner@example.com"}
    assert emails("?confirmed=false") == {"new@example.com"}
    # All-products subscribers hear about Cloud Storage; the Gmail-only one does not.
    assert emails("?product=cloud-storage") == {"new@example.com", "owner@example.com"}
    assert Product.objects.filter(slug="cloud-storage").exists()


def test_it_answers_bad_filters_with_400(staff_api: Client, subscribers: dict[str, Subscriber]) -> None:
    response = staff_api.get(URL + "?kind=pigeon")
    assert response.status_code == 400
    assert response.json()["errors"]["kind"]


def test_it_is_read_only(staff_api: Client, subscribers: dict[str, Subscriber]) -> None:
    assert (
        staff_api.post(URL, data={"email": "x@example.com"}, content_type="application/json").status_code
        == 405
    )
    assert staff_api.delete(f"{URL}{subscribers['pending'].pk}/").status_code == 405
    assert Subscriber.objects.count() == 3
