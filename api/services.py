"""Writes of the API room: API keys (create, touch, revoke) and idempotency records."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from api.models import ApiKey, IdempotencyRecord
from core import roles
from core.text import clean_single_line

KEY_PREFIX = "sp_"
# A key's last use is written at most this often: a busy key would otherwise cost a
# write per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class NewKey:
    key: ApiKey
    raw: str  # shown to its owner once, never stored


def may_write(user: User | None) -> bool:
    """Whether a role of this user writes anything (a write key needs one: a key never
    says more than its creator may do)."""
    return any(roles.allowed(user, action) for action in roles.ACTIONS if action != "console.view")


def clean_expiry(expires_at: datetime | None, *, now: datetime | None = None) -> datetime | None:
    """An expiry is an aware moment in the future (or None: never)."""
    if expires_at is None:
        return None
    if timezone.is_naive(expires_at):
        raise ValidationError({"expires_at": "Give a time zone (e.g. 2027-01-01T00:00:00Z)."})
    if expires_at <= (now or timezone.now()):
        raise ValidationError({"expires_at": "The expiry must be in the future."})
    return expires_at


def api_key_create(
    *,
    user: User,
    name: str,
    scope: str,
    actor: User | None = None,
    expires_at: datetime | None = None,
) -> NewKey:
    """A key for `user` (the actor itself on /api/keys/ and the API; an Administrator may
    mint one for another user through code). The key acts as its owner, so its power is
    always bounded by the owner's role at the time of use. Past `expires_at` (if given)
    the key is refused like a revoked one."""
    roles.check(actor, "apikey.manage")
    if not getattr(user, "is_staff", False):
        raise ValidationError("Only staff users hold API keys.")
    if scope not in ApiKey.Scope.values:
        raise ValidationError({"scope": f"Unknown scope {scope!r}."})
    if scope == ApiKey.Scope.WRITE and actor is not None and not may_write(actor):
        raise ValidationError({"scope": "Your role writes nothing, so you may only create read keys."})
    name = clean_single_line(name, field="name", max_length=100)
    expires_at = clean_expiry(expires_at)
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        user=user, name=name, scope=scope, prefix=raw[:10], key_hash=hash_key(raw), expires_at=expires_at
    )
    return NewKey(key=key, raw=raw)


def api_key_revoke(*, key: ApiKey, actor: User | None = None, now: datetime | None = None) -> ApiKey:
    """Revoke a key: one's own with `apikey.manage`; another user's also needs
    `users.manage` (the Administrator's duty: revoking a leaver's or a leaked key)."""
    roles.check(actor, "apikey.manage")
    if actor is not None and key.user_id != actor.pk:
        roles.check(actor, "users.manage")
    now = now or timezone.now()
    # Conditional update: revoking twice keeps the first moment.
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now)
    key.refresh_from_db(fields=["revoked_at"])
    return key


def api_keys_visible(*, actor: User, everyone: bool = False) -> QuerySet[ApiKey]:
    """The actor's own keys; with `everyone`, every user's (needs `users.manage`)."""
    if not everyone:
        return ApiKey.objects.filter(user=actor)
    roles.check(actor, "users.manage")
    return ApiKey.objects.select_related("user")


def api_key_touch(*, key: ApiKey, now: datetime | None = None) -> None:
    now = now or timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_RESOLUTION:
        return
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    key.last_used_at = now


# --- Idempotency ------------------------------------------------------------------------------


IDEMPOTENCY_ABANDONED_AFTER = timedelta(minutes=2)


def idempotency_ttl() -> timedelta:
    return timedelta(hours=settings.API_IDEMPOTENCY_TTL_HOURS)


@transaction.atomic
def idempotency_claim(
    *, user: User, key: str, fingerprint: str, now: datetime | None = None
) -> tuple[IdempotencyRecord, bool]:
    """The record for this key, and whether this request is the first (claimed it)."""
    now = now or timezone.now()
    # An expired record is as good as absent: remove it so the key can be reused. So is a
    # claim with no answer past any request's lifetime (the gunicorn watchdog ends a
    # request at 30 s): its request died, and since the answer commits with the write
    # (api.idempotency.run), nothing of it was applied.
    IdempotencyRecord.objects.filter(user=user, key=key, expires_at__lte=now).delete()
    IdempotencyRecord.objects.filter(
        user=user, key=key, status_code__isnull=True, created_at__lte=now - IDEMPOTENCY_ABANDONED_AFTER
    ).delete()
    record, created = IdempotencyRecord.objects.get_or_create(
        user=user,
        key=key,
        defaults={"fingerprint": fingerprint, "created_at": now, "expires_at": now + idempotency_ttl()},
    )
    return record, created


def idempotency_store(*, record: IdempotencyRecord, status_code: int, body: object, location: str) -> None:
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        status_code=status_code, body=body, location=location[:500]
    )


def idempotency_release(*, record: IdempotencyRecord) -> None:
    """Forget a claim whose request failed, so a retry with the same key runs again."""
    IdempotencyRecord.objects.filter(pk=record.pk, status_code__isnull=True).delete()


def idempotency_sweep(*, now: datetime | None = None, batch: int = 1000) -> int:
    """Delete expired records, a bounded batch at a time; returns how many went."""
    now = now or timezone.now()
    removed = 0
    for _ in range(1000):
        ids = list(IdempotencyRecord.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:batch])
        if not ids:
            break
        removed += IdempotencyRecord.objects.filter(pk__in=ids).delete()[0]
    return removed
