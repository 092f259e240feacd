"""The follow-through of action items: every change of an item's status, due date or
owner, with who made it and when (docs/adr/0022-follow-through-and-export.md).

Rows are written by postmortems.follow when the incident room announces a change; they
are never edited. The public report shows the status and due-date rows of public items.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class FollowedField(models.TextChoices):
    STATUS = "status", _("Status")
    DUE_DATE = "due_date", _("Due date")
    OWNER = "owner", _("Owner")


class ActionItemChange(models.Model):
    """One change of one followed field of an action item."""

    Field = FollowedField

    # Shown publicly (for public items): the owner is a staff member, so never.
    PUBLIC_FIELDS = (FollowedField.STATUS, FollowedField.DUE_DATE)

    item = models.ForeignKey("incidents.ActionItem", on_delete=models.CASCADE, related_name="changes")
    field = models.CharField(max_length=12, choices=FollowedField.choices)
    # The values as text: a status value, an ISO date, a username; "" for none.
    old_value = models.CharField(max_length=150, blank=True)
    new_value = models.CharField(max_length=150, blank=True)
    # Why, for a change of status to "won't do" (required there by the service).
    reason = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["changed_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(field__in=FollowedField.values), name="action_change_field_valid"
            )
        ]
        indexes = [models.Index(fields=["item", "changed_at"], name="action_change_item_at")]

    def __str__(self) -> str:
        return f"{self.field}: {self.old_value} -> {self.new_value}"
