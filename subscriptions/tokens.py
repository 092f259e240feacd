"""Signed links for subscribers: confirm, manage and unsubscribe.

A token is `TimestampSigner(salt=purpose).sign(subscriber.token)`: the subscriber's
random token (never the address), a timestamp for expiry, and an HMAC that binds both
to SECRET_KEY and to the purpose. A confirm link cannot be used to unsubscribe and the
other way round, because the salt differs. Django's signer also accepts signatures
made with SECRET_KEY_FALLBACKS, so links in old emails survive a key rotation.
"""

from __future__ import annotations

import enum

from django.conf import settings
from django.core import signing

from subscriptions.models import Subscriber


class Purpose(enum.StrEnum):
    CONFIRM = "confirm"
    MANAGE = "manage"
    UNSUBSCRIBE = "unsubscribe"


class TokenInvalid(Exception):
    """Tampered, from another purpose, or not a token at all."""


class TokenExpired(TokenInvalid):
    """Genuine but older than the purpose allows."""


def _signer(purpose: Purpose) -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=f"subscriptions.{purpose.value}")


def _max_age(purpose: Purpose) -> int:
    return {
        Purpose.CONFIRM: settings.SUBSCRIPTION_CONFIRM_MAX_AGE,
        Purpose.MANAGE: settings.SUBSCRIPTION_MANAGE_MAX_AGE,
        Purpose.UNSUBSCRIBE: settings.SUBSCRIPTION_UNSUBSCRIBE_MAX_AGE,
    }[purpose]


def make_token(subscriber: Subscriber, purpose: Purpose) -> str:
    return _signer(purpose).sign(subscriber.token)


def read_token(token: str, purpose: Purpose) -> str:
    """The subscriber token inside `token`, or TokenInvalid / TokenExpired."""
    try:
        return _signer(purpose).unsign(token, max_age=_max_age(purpose))
    except signing.SignatureExpired as exc:
        raise TokenExpired(str(exc)) from exc
    except signing.BadSignature as exc:
        raise TokenInvalid(str(exc)) from exc
