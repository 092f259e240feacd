"""Forms of the incident admin.

Forms parse and check the shape of input; the domain rules run in `incidents.services`,
whose `ValidationError`s the admin turns back into errors on these forms.
"""

from __future__ import annotations

from typing import Any

from django import forms

from incidents.models import ImpactWindow, Incident, IncidentReport, Location


class IncidentAddForm(forms.ModelForm):
    """Filing an incident: the incident, its first timeline entry and (inline) its windows."""

    status = forms.ChoiceField(
        required=False,
        choices=[("", "Default for the kind (investigating / scheduled)")]
        + [
            (s.value, s.label)
            for s in (*Incident.INCIDENT_STATUSES, *Incident.MAINTENANCE_STATUSES)
            if s not in Incident.CLOSED_STATUSES
        ],
        help_text="Investigating, identified or monitoring for an incident; scheduled, in progress "
        "or verifying for a maintenance.",
    )
    body = forms.CharField(
        label="First update",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Markdown. The first entry of the public timeline; the summary or title when empty.",
    )
    notify = forms.BooleanField(label="Notify subscribers", required=False, initial=True)

    class Meta:
        model = Incident
        fields = [
            "title",
            "kind",
            "impact",
            "started_at",
            "detected_at",
            "scheduled_for",
            "scheduled_until",
            "summary",
            "is_public",
            "recurrence_of",
            "internal_notes",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Empty means "now" (or the scheduled start, for a maintenance): see incident_open.
        self.fields["started_at"].required = False
        self.fields["started_at"].help_text = "When customer impact began (UTC). Empty: now."


class IncidentChangeForm(forms.ModelForm):
    """Editing an incident: its words, visibility and times. Status moves by the console's updates."""

    class Meta:
        model = Incident
        fields = [
            "title",
            "impact",
            "started_at",
            "detected_at",
            "mitigated_at",
            "scheduled_for",
            "scheduled_until",
            "summary",
            "is_public",
            "recurrence_of",
            "internal_notes",
        ]


class ImpactWindowInlineForm(forms.ModelForm):
    class Meta:
        model = ImpactWindow
        fields = ["product", "location", "level", "started_at", "ended_at", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2, "cols": 40})}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        started_at, ended_at = cleaned.get("started_at"), cleaned.get("ended_at")
        if started_at and ended_at and ended_at < started_at:
            self.add_error("ended_at", "The end must not be before the start.")
        return cleaned


class IncidentReportInlineForm(forms.ModelForm):
    status = forms.ChoiceField(
        choices=[
            (IncidentReport.Status.DRAFT.value, IncidentReport.Status.DRAFT.label),
            (IncidentReport.Status.IN_REVIEW.value, IncidentReport.Status.IN_REVIEW.label),
        ],
        initial=IncidentReport.Status.DRAFT,
        help_text="Approve and publish the report from its review page in the console.",
    )

    class Meta:
        model = IncidentReport
        fields = ["kind", "status", "summary", "root_cause", "remediation", "impact_description"]
        labels = {
            "root_cause": "Root cause",
            "remediation": "Remediation and prevention",
            "impact_description": "Detailed description of impact",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and (self.instance.is_published or self.instance.is_approved):
            # Shown read only by the admin: approving and publishing are the review's
            # (docs/adr/0021-report-review.md); a published report stays published.
            del self.fields["status"]


class LocationAdminForm(forms.ModelForm):
    """The location tree: zones sit in a region, regions at the top or under global."""

    class Meta:
        model = Location
        fields = ["name", "display_name", "kind", "parent"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind, parent = cleaned.get("kind"), cleaned.get("parent")
        if kind == Location.Kind.GLOBAL and parent is not None:
            self.add_error("parent", "A global location has no parent.")
        elif kind == Location.Kind.ZONE and (parent is None or parent.kind != Location.Kind.REGION):
            self.add_error("parent", "A zone belongs to a region.")
        elif kind == Location.Kind.REGION and parent is not None and parent.kind != Location.Kind.GLOBAL:
            self.add_error("parent", "A region sits at the top or under a global location.")
        # Walk up from the chosen parent: choosing a descendant would make a loop.
        node = parent
        while node is not None and self.instance.pk is not None:
            if node.pk == self.instance.pk:
                self.add_error("parent", "A location cannot sit inside itself.")
                break
            node = node.parent
        return cleaned
