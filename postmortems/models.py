"""Postmortem records that sit beside an incident: staff timeline entries and links
between incidents (a recurrence of, or related to, another). Rules live in
`postmortems.services`; the merged timeline in `postmortems.selectors`.
Design: docs/adr/0020-timeline.md.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from incidents.models import Incident


class Phase(models.TextChoices):
    DETECTION = "detection", _("Detection")
    DIAGNOSIS = "diagnosis", _("Diagnosis")
    MITIGATION = "mitigation", _("Mitigation")
    RESOLUTION = "resolution", _("Resolution")
    OTHER = "other", _("Other")


class Visibility(models.TextChoices):
    PUBLIC = "public", _("Public")
    INTERNAL = "internal", _("Internal")


class LinkKind(models.TextChoices):
    RECURRENCE_OF = "recurrence_of", _("Recurrence of")
    RELATED_TO = "related_to", _("Related to")


class TimelineEntry(models.Model):
    """Something staff add to an incident's timeline: a deploy, a decision, a page sent."""

    Phase = Phase
    Visibility = Visibility
    FIELDS = ("at", "text", "phase", "visibility")

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="timeline_entries")
    at = models.DateTimeField(help_text="When it happened.")
    text = models.TextField(help_text="Markdown.")
    text_html = models.TextField(blank=True, default="", editable=False, help_text="Rendered from text.")
    phase = models.CharField(max_length=12, choices=Phase.choices, default=Phase.OTHER)
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.INTERNAL)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(phase__in=Phase.values), name="timeline_entry_phase_valid"),
            models.CheckConstraint(
                condition=Q(visibility__in=Visibility.values), name="timeline_entry_visibility_valid"
            ),
        ]
        indexes = [models.Index(fields=["incident", "at"], name="timeline_entry_incident_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.text[:40]}"

    @property
    def is_public(self) -> bool:
        return self.visibility == Visibility.PUBLIC


class IncidentLink(models.Model):
    """`from_incident` is a recurrence of, or is related to, `to_incident`."""

    Kind = LinkKind

    from_incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="links_out")
    to_incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="links_in")
    kind = models.CharField(max_length=16, choices=LinkKind.choices, default=LinkKind.RELATED_TO)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=LinkKind.values), name="incident_link_kind_valid"),
            models.CheckConstraint(
                condition=~Q(from_incident=F("to_incident")),
                name="incident_link_not_self",
                violation_error_message="An incident cannot be linked to itself.",
            ),
            models.UniqueConstraint(
                fields=["from_incident", "to_incident"],
                name="incident_link_unique_pair",
                violation_error_message="These incidents are already linked.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.from_incident_id} {self.kind} {self.to_incident_id}"
