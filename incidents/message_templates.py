"""Message templates: a ready-made title and public message staff start an incident or an
update from. Written by the console and the API (incidents.services.templates), so they
live in this room, below both; the table keeps its first name (`console_messagetemplate`,
the console held them until the API needed them too)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from incidents.models import IncidentStatus


class TemplateKind(models.TextChoices):
    INCIDENT = "incident", "New incident (title and first message)"
    UPDATE = "update", "Update (message)"


class MessageTemplate(models.Model):
    """A ready-made title and public message that staff start an incident or update from."""

    Kind = TemplateKind

    name = models.CharField(max_length=100, unique=True, help_text="What staff pick it by.")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.UPDATE)
    title = models.CharField(max_length=200, blank=True, help_text="Incident title (new incidents only).")
    status = models.CharField(
        max_length=16,
        choices=IncidentStatus.choices,
        blank=True,
        help_text="The status the message is usually posted with; empty: keep the form's.",
    )
    body = models.TextField(help_text="The public message (Markdown).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "console_messagetemplate"
        ordering = ["kind", "name"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=TemplateKind.values), name="template_kind_valid"),
            models.CheckConstraint(
                condition=Q(status="") | Q(status__in=IncidentStatus.values), name="template_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name
