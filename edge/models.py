"""The edge room's own state: one row holding the public-state version stamp, the public
writes whose bump is not known to have landed, and the pages that failed to render."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


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


class PendingBump(models.Model):
    """A public write whose stamp bump is not known to have been stored yet.

    Written in the write's own transaction, so it exists exactly when the write committed;
    deleted once the bump after the commit reached both the stamp row and the shared cache.
    One left behind (the process killed between the commit and the bump, the database or
    the cache unreachable then) is re-applied by the sweep (edge.version.sweep_pending_bumps,
    every PUBLIC_STATE_SWEEP_SECONDS): otherwise pages keyed by the old stamp would be served
    as fresh until the next public write.
    """

    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"pending bump {self.pk} of {self.created_at:%Y-%m-%d %H:%M:%S}"


class RenderProblem(models.Model):
    """A public page or feed entry that failed to render, for staff to see.

    The reader got the last good copy or a degraded entry (never a 500); this row is how
    staff learn of it. One row per thing that failed (kind + key), counted, with the
    first and the last time it was seen and the latest error; deleted when the same
    thing renders fine again (edge/render_problems.py).
    """

    class Kind(models.TextChoices):
        PAGE = "page", "Public page"
        FEED_ENTRY = "feed_entry", "Feed entry"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    # What failed: the page's cache name (one per URL variant), or the incident's public id
    # for a feed entry.
    key = models.CharField(max_length=200)
    # What staff read: the path that was requested, or the incident's title.
    label = models.CharField(max_length=300)
    error = models.TextField()
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    count = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-last_seen_at"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "key"], name="edge_render_problem_once"),
            models.CheckConstraint(
                condition=models.Q(kind__in=["page", "feed_entry"]), name="edge_render_problem_kind"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.label}: {self.error}"
