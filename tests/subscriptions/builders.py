"""Deterministic builders for subscribers."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from incidents.models import Product
from subscriptions.models import Subscriber


def make_subscriber(
    email: str = "carol@example.com",
    *,
    products: Iterable[Product] = (),
    confirmed: bool = True,
    kind: str = Subscriber.Kind.EMAIL,
    url: str = "",
    secret: str = "s3cret-for-tests",  # noqa: S107 - a test fixture value
) -> Subscriber:
    chosen = list(products)
    subscriber = Subscriber.objects.create(
        kind=kind,
        email=email,
        url=url,
        all_products=not chosen,
        secret=secret,
        confirmed_at=timezone.now() if confirmed else None,
    )
    subscriber.products.set(chosen)
    return subscriber
