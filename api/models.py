"""What the API keeps of its own: API keys, and the responses of idempotent POSTs.

They live in `api/` because nothing below the API needs them: a key is only meaningful
to the API's authentication, and a stored response only to the API's replay.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class ApiKey(models.Model):
    """A staff user's named key. Only a hash is stored; the key is shown once, at creation."""

    class Scope(models.TextChoices):
        READ = "read", "Read (staff reads, no writes)"
        WRITE = "write", "Read and write"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    # The first characters of the key, to tell keys apart in lists (not a secret).
    prefix = models.CharField(max_length=16)
    # sha256 of the whole key: the key has 256 bits of entropy, so a plain hash is enough
    # and a lookup is one indexed equality.
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Empty: the key never expires. Past it, the key is refused (401) like a revoked one.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(scope__in=["read", "write"]), name="apikey_scope_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE


class IdempotencyRecord(models.Model):
    """The first response to a POST sent with an `Idempotency-Key`, replayed on a retry.

    Unique per user and key, so two concurrent first attempts cannot both run: the loser
    of the insert sees the winner's row.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # sha256 of method, path and body: the same key with another request is a client bug.
    fingerprint = models.CharField(max_length=64)
    # Null while the first attempt is still running.
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True)
    location = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique_per_user"),
        ]
        indexes = [models.Index(fields=["expires_at"], name="idempotency_expires_idx")]

    def __str__(self) -> str:
        return f"{self.key} ({self.user_id})"
