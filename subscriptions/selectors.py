"""Reads for subscriptions."""

from __future__ import annotations

from subscriptions.models import Subscriber
from subscriptions.tokens import Purpose, read_token


def subscriber_from_token(*, token: str, purpose: Purpose) -> Subscriber | None:
    """The subscriber a signed link names, or None when it no longer exists.

    Raises TokenInvalid / TokenExpired for a link we did not sign for this purpose.
    """
    value = read_token(token, purpose)
    return Subscriber.objects.prefetch_related("products").filter(token=value).first()
