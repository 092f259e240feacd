"""The console's Edit incident form: the descriptive fields and times of an incident, as
`incidents.services.incident_edit` takes them (docs/console.md, Edit)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms

from console.forms import zoned_datetime_field
from incidents.models import Incident


class IncidentEditForm(forms.Form):
    title = forms.CharField(max_length=200)
    started_at = zoned_datetime_field(
        "Impact began",
        help_text="Impact windows that began at the old start move with it; the public timeline is not changed.",
    )
    detected_at = zoned_datetime_field(
        "Detected", help_text="When we noticed it (not before impact began). Empty: not recorded."
    )
    summary = forms.CharField(
        label="Public summary",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "data-preview": "1"}),
        help_text="Markdown. Shown on the incident's public page above its timeline.",
    )
    internal_notes = forms.CharField(
        label="Internal notes",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Staff only; never shown publicly.",
    )

    def __init__(self, *args: Any, incident: Incident, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {name: getattr(incident, name) for name in self.base_fields})
        super().__init__(*args, **kwargs)
        self.incident = incident
        started = self.fields["started_at"]
        started.required = True
        if incident.is_maintenance:
            started.label = str(started.label).replace("Impact began", "Started")

    def changes(self) -> dict[str, Any]:
        """The fields that differ from the incident as it is: the service gets only those."""
        return {
            name: value
            for name, value in self.cleaned_data.items()
            if not _same(getattr(self.incident, name), value)
        }


def _same(old: Any, new: Any) -> bool:
    # Times are typed to the minute, and text comes back with the browser's line breaks:
    # an untouched field must not count as an edit.
    if isinstance(old, datetime) and isinstance(new, datetime):
        return old.replace(second=0, microsecond=0) == new
    if isinstance(old, str) and isinstance(new, str):
        return old.replace("\r\n", "\n").strip() == new.replace("\r\n", "\n").strip()
    return bool(old == new)
