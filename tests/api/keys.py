"""A key for a test user: the hashed API key every test uses since DRF tokens retired."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User

from api.models import ApiKey
from api.services import hash_key


def key_for(user: User, scope: str = "write") -> str:
    """A key held by `user`, made directly (no role check): tests of other rules need one
    for any user, including a non-staff one whose key must then be refused."""
    raw = "sp_" + secrets.token_urlsafe(32)
    ApiKey.objects.create(
        user=user, name=f"{scope} key", scope=scope, prefix=raw[:10], key_hash=hash_key(raw)
    )
    return raw
