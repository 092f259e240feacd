"""Postmortem records that sit beside an incident: staff timeline entries and links
between incidents (docs/adr/0020-timeline.md); the review log, revisions, contributing
factors, reflections and report templates (docs/adr/0021-report-review.md). The report
itself is the incident room's `IncidentReport`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from incidents.models import Incident, IncidentReport


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


def _choices_check(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name)


class ReviewEventKind(models.TextChoices):
    TRANSITION = "transition", _("Status change")
    COMMENT = "comment", _("Comment")
    REVISION = "revision", _("Revision published")


class FactorKind(models.TextChoices):
    CHANGE = "change", _("Change")
    DEPENDENCY = "dependency", _("Dependency")
    CAPACITY = "capacity", _("Capacity")
    CONFIGURATION = "configuration", _("Configuration")
    PROCESS = "process", _("Process")
    DETECTION_GAP = "detection_gap", _("Detection gap")
    OTHER = "other", _("Other")


class ReflectionSection(models.TextChoices):
    WENT_WELL = "went_well", _("What went well")
    WENT_WRONG = "went_wrong", _("What went wrong")
    GOT_LUCKY = "got_lucky", _("Where we got lucky")


class ReviewRequest(models.Model):
    """The author asked this person to review the report."""

    report = models.ForeignKey(IncidentReport, on_delete=models.CASCADE, related_name="review_requests")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["report", "reviewer"], name="review_request_once"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} reviews {self.report}"


class ReviewEvent(models.Model):
    """One line of a report's review log: a status change, a comment, a revision. Never
    edited or deleted: the log is what happened."""

    Kind = ReviewEventKind

    report = models.ForeignKey(IncidentReport, on_delete=models.CASCADE, related_name="review_events")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    status = models.CharField(max_length=12, blank=True, help_text="The status moved to (a status change).")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A comment's target: a report section key ("summary", a reflection, ...) or a
    # timeline entry ("timeline:<id>"); a string, not a key, so the log outlives entries.
    anchor = models.CharField(max_length=100, blank=True)
    body = models.TextField(blank=True, help_text="Markdown.")
    body_html = models.TextField(blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["report", "created_at"], name="review_event_log")]
        constraints = [_choices_check("kind", ReviewEventKind, "review_event_kind_valid")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.report}"


class ReportRevision(models.Model):
    """The text of a report as it was published, once per publication and revision: the
    newest is what the public page shows; the earlier ones stay readable to staff."""

    report = models.ForeignKey(IncidentReport, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=8)
    summary_html = models.TextField(blank=True)
    root_cause_html = models.TextField(blank=True)
    remediation_html = models.TextField(blank=True)
    impact_description_html = models.TextField(blank=True)
    published_at = models.DateTimeField()
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["report", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["report", "number"], name="report_revision_number_once"),
        ]

    def __str__(self) -> str:
        return f"Revision {self.number} of {self.report}"


class ContributingFactor(models.Model):
    """One of the several things that together made the incident (not one root cause)."""

    Kind = FactorKind

    report = models.ForeignKey(IncidentReport, on_delete=models.CASCADE, related_name="factors")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    description = models.TextField()
    is_public = models.BooleanField(default=False, help_text="Listed on the public report.")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "pk"]
        constraints = [_choices_check("kind", FactorKind, "contributing_factor_kind_valid")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.description[:40]}"


class Reflection(models.Model):
    """'What went well', 'what went wrong', 'where we got lucky': internal by default."""

    Section = ReflectionSection

    report = models.ForeignKey(IncidentReport, on_delete=models.CASCADE, related_name="reflections")
    section = models.CharField(max_length=12, choices=Section.choices)
    body = models.TextField(blank=True, help_text="Markdown.")
    body_html = models.TextField(blank=True, default="", editable=False)
    is_public = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["report", "section"], name="reflection_once_per_section"),
            _choices_check("section", ReflectionSection, "reflection_section_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.get_section_display()}: {self.report}"


class ReportTemplate(models.Model):
    """What a new report starts from: the text of its sections and reflections. The
    default is the Google-style four sections; organisations edit or add their own."""

    name = models.CharField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True)
    is_default = models.BooleanField(default=False)
    summary = models.TextField(blank=True)
    root_cause = models.TextField(blank=True)
    remediation = models.TextField(blank=True)
    impact_description = models.TextField(blank=True)
    went_well = models.TextField(blank=True)
    went_wrong = models.TextField(blank=True)
    got_lucky = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    SECTIONS = ("summary", "root_cause", "remediation", "impact_description")
    REFLECTIONS = ("went_well", "went_wrong", "got_lucky")

    class Meta:
        ordering = ["-is_default", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="report_template_one_default"
            ),
        ]

    def __str__(self) -> str:
        return self.name


# The follow-through history has its own module (docs/adr/0022-follow-through-and-export.md).
from postmortems.follow_models import ActionItemChange  # noqa: E402, F401
