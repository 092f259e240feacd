"""Signed links: what they carry, and every way of abusing them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import signing
from freezegun import freeze_time

from subscriptions.tokens import Purpose, TokenExpired, TokenInvalid, make_token, read_token
from tests.builders import utc
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db


def test_it_round_trips_and_never_contains_the_address() -> None:
    subscriber = make_subscriber("carol.secret@example.com")
    for purpose in Purpose:
        token = make_token(subscriber, purpose)
        assert read_token(token, purpose) == subscriber.token
        assert "carol" not in token.lower() and "example" not in token.lower()
        # Not even base64-encoded: the payload is the random token, nothing else.
        assert signing.b64_encode(b"carol").decode() not in token


def test_it_refuses_a_tampered_token() -> None:
    subscriber = make_subscriber()
    token = make_token(subscriber, Purpose.UNSUBSCRIBE)
    other = make_subscriber("dave@example.com")
    value, stamp, signature = token.split(":")
    for forged in (
        f"{other.token}:{stamp}:{signature}",  # someone else's id under this signature
        f"{value}:{stamp}:{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}",
        f"{value}:{stamp}",
        "",
    ):
        with pytest.raises(TokenInvalid):
            read_token(forged, Purpose.UNSUBSCRIBE)


def test_it_refuses_a_token_made_for_another_purpose() -> None:
    subscriber = make_subscriber()
    confirm = make_token(subscriber, Purpose.CONFIRM)
    with pytest.raises(TokenInvalid):
        read_token(confirm, Purpose.UNSUBSCRIBE)
    with pytest.raises(TokenInvalid):
        read_token(make_token(subscriber, Purpose.UNSUBSCRIBE), Purpose.MANAGE)


def test_it_expires_tokens_per_purpose(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SUBSCRIPTION_CONFIRM_MAX_AGE = 3600
    settings.SUBSCRIPTION_UNSUBSCRIBE_MAX_AGE = 10 * 86400
    with freeze_time(utc(2026, 3, 1, 12, 0)):
        subscriber = make_subscriber()
        confirm = make_token(subscriber, Purpose.CONFIRM)
        unsubscribe = make_token(subscriber, Purpose.UNSUBSCRIBE)
    with freeze_time(utc(2026, 3, 1, 12, 0) + timedelta(minutes=59)):
        assert read_token(confirm, Purpose.CONFIRM) == subscriber.token
    with freeze_time(utc(2026, 3, 1, 13, 1)):
        with pytest.raises(TokenExpired):
            read_token(confirm, Purpose.CONFIRM)
        # The unsubscribe link in the same email lives longer.
        assert read_token(unsubscribe, Purpose.UNSUBSCRIBE) == subscriber.token
    with freeze_time(utc(2026, 3, 12, 12, 0)), pytest.raises(TokenExpired):
        read_token(unsubscribe, Purpose.UNSUBSCRIBE)


def test_it_accepts_old_links_during_a_key_rotation(settings) -> None:  # type: ignore[no-untyped-def]
    subscriber = make_subscriber()
    settings.SECRET_KEY = "old-key-" + "x" * 40
    old_link = make_token(subscriber, Purpose.UNSUBSCRIBE)
    settings.SECRET_KEY = "new-key-" + "y" * 40
    settings.SECRET_KEY_FALLBACKS = ["old-key-" + "x" * 40]
    assert read_token(old_link, Purpose.UNSUBSCRIBE) == subscriber.token
    # New links are signed with the new key ...
    new_link = make_token(subscriber, Purpose.UNSUBSCRIBE)
    assert new_link != old_link
    # ... and once the old key is retired, old links stop working.
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(TokenInvalid):
        read_token(old_link, Purpose.UNSUBSCRIBE)
    assert read_token(new_link, Purpose.UNSUBSCRIBE) == subscriber.token
