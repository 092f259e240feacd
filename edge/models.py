"""The edge room's own state: one row holding the public-state version stamp."""

from __future__ import annotations

from django.db import models


class PublicStateStamp(models.Model):
    """The public-state version, kept in the database as well as in the shared cache.

    The cache is the fast path (one read per request). This row is what the web processes
    read when the cache server is unreachable, so a change still shows within
    PUBLIC_STATE_DB_POLL seconds instead of each process keeping its own idea of "now"
    until the cache returns. One row (pk=1), written after each change commits.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.CharField(max_length=32)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="edge_stamp_single_row")]

    def __str__(self) -> str:
        return self.version
