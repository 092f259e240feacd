"""The forms of the console's update screens (console/update_views.py): post an update,
resolve, change levels internally, correct a published update. Shared field helpers
live in console/forms.py."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms import (
    IMPACT_CHOICES,
    LEVELS,
    OPERATIONAL,
    Status,
    _markdown_area,
    level_field_name,
    zoned_datetime_field,
)
from incidents.models import Incident, Location, Product
from incidents.selectors import ImpactTarget

# Blank "also affected" rows: enough for the usual spread of an incident, with no
# JavaScript to add more (a product added once is a row of its own on the next update).
ADDED_ROWS = 3
PUBLIC = "public"
INTERNAL = "internal"
CLOSING = (Status.RESOLVED, Status.COMPLETED)


class AddedRow:
    """One "also affected" row: its number and its three bound fields."""

    def __init__(self, number: int, form: forms.Form) -> None:
        self.number = number
        self.product = form[f"add_product_{number}"]
        self.location = form[f"add_location_{number}"]
        self.level = form[f"add_level_{number}"]

    @property
    def errors(self) -> bool:
        return bool(self.product.errors or self.location.errors or self.level.errors)


class UpdateForm(forms.Form):
    kind = forms.ChoiceField(
        label="What to post",
        choices=[
            (PUBLIC, "Public update"),
            (INTERNAL, "Internal level change (no public post, nobody notified)"),
        ],
        initial=PUBLIC,
        widget=forms.RadioSelect,
        required=False,
        help_text="An internal level change moves the levels below (the status page shows them) "
        "without a timeline entry; the status stays as it is and the message stays empty.",
    )
    status = forms.ChoiceField()
    body = forms.CharField(label="Public message", widget=_markdown_area(), required=False)
    note = forms.CharField(
        label="Staff note",
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        max_length=5000,
        help_text="Internal level changes only. Plain text, shown to staff on the incident page, never public.",
    )
    audience_message = forms.CharField(
        label="Audience message",
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="Optional, Markdown: shown under the public message on customer pages only.",
    )
    internal_note = forms.CharField(
        label="Internal note",
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="Optional, Markdown: shown under the public message on internal pages only.",
    )
    display_at = zoned_datetime_field(
        "Time of the update", help_text="Empty: now. Level changes take effect at this time."
    )
    impact = forms.ChoiceField(label="Overall impact", choices=IMPACT_CHOICES, required=False)
    notify = forms.BooleanField(label="Notify subscribers", required=False, initial=True)

    def __init__(
        self,
        *args: Any,
        incident: Incident,
        targets: list[ImpactTarget],
        resolving: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.incident = incident
        allowed = Incident.MAINTENANCE_STATUSES if incident.is_maintenance else Incident.INCIDENT_STATUSES
        status_field = self.fields["status"]
        assert isinstance(status_field, forms.ChoiceField)
        status_field.choices = [(s.value, s.label) for s in allowed if s != Status.POSTMORTEM]
        self._impact_field(resolving)
        if resolving:
            # Resolving is a public post: no internal choice, no staff note.
            del self.fields["kind"], self.fields["note"]
        self.targets: list[tuple[ImpactTarget, forms.BoundField]] = []
        for target in targets:
            name = level_field_name(target.product, target.location)
            where = target.location.label if target.location else "all locations"
            self.fields[name] = forms.ChoiceField(
                label=f"{target.product.name} ({where})", choices=LEVELS, initial=target.level
            )
            self.targets.append((target, self[name]))
        for number in range(1, ADDED_ROWS + 1):
            self.fields[f"add_product_{number}"] = forms.ModelChoiceField(
                label="Product", queryset=Product.objects.order_by("name"), required=False, empty_label="None"
            )
            self.fields[f"add_location_{number}"] = forms.ModelChoiceField(
                label="In location",
                queryset=Location.objects.order_by("name"),
                required=False,
                empty_label="All locations",
            )
            self.fields[f"add_level_{number}"] = forms.ChoiceField(
                label="At level", choices=LEVELS[1:], required=False
            )
        self.added_rows = [AddedRow(number, self) for number in range(1, ADDED_ROWS + 1)]

    def _impact_field(self, resolving: bool) -> None:
        field = self.fields["impact"]
        assert isinstance(field, forms.ChoiceField)
        field.initial = ""
        if resolving:
            field.choices = [
                ("", f"Keep the worst reached ({self.incident.get_impact_display()})"),
                *IMPACT_CHOICES[1:],
            ]
            field.help_text = (
                "Recorded as the incident's final impact. Resolving ends every impact, so every "
                "level above must be operational."
            )
        else:
            field.help_text = (
                "While open, what the page banner shows; by default the worst level sets it. "
                "With a resolving status, the impact chosen here is recorded as the incident's final impact."
            )

    @property
    def internal(self) -> bool:
        return self.cleaned_data.get("kind") == INTERNAL

    @property
    def closing(self) -> bool:
        return self.cleaned_data.get("status") in CLOSING

    def levels(self) -> list[tuple[Product, Location | None, str]]:
        chosen = [(t.product, t.location, self.cleaned_data[f.name]) for t, f in self.targets]
        for row in self.added_rows:
            product = self.cleaned_data.get(row.product.name)
            if product is not None:
                chosen.append(
                    (product, self.cleaned_data.get(row.location.name), self.cleaned_data[row.level.name])
                )
        return chosen

    def mark_open_levels(self) -> None:
        """After a refused resolve, point at each level that is not operational."""
        fields = [f.name for _, f in self.targets]
        fields += [row.level.name for row in self.added_rows if self.cleaned_data.get(row.product.name)]
        for name in fields:
            if self.cleaned_data.get(name, OPERATIONAL) != OPERATIONAL:
                self.add_error(name, "Set this operational to resolve.")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._clean_added_rows(cleaned)
        if cleaned.get("kind") == INTERNAL:
            self._clean_internal(cleaned)
        elif not (cleaned.get("body") or "").strip() and "body" not in self.errors:
            self.add_error("body", "Write the public message, or choose an internal level change.")
        return cleaned

    def _clean_added_rows(self, cleaned: dict[str, Any]) -> None:
        """Each row on its own: a product with a level, listed nowhere else."""
        seen = {(t.product.pk, t.location.pk if t.location else None) for t, _ in self.targets}
        for row in self.added_rows:
            product = cleaned.get(row.product.name)
            location = cleaned.get(row.location.name)
            if product is None:
                if location is not None:
                    self.add_error(row.product.name, "Choose the product affected in this location.")
                continue
            if not cleaned.get(row.level.name):
                self.add_error(row.level.name, "Choose the level of the added product.")
            key = (product.pk, location.pk if location else None)
            if key in seen:
                self.add_error(
                    row.product.name,
                    f"{product.name} ({location.label if location else 'all locations'}) is already "
                    "listed; set its level there.",
                )
            seen.add(key)

    def _clean_internal(self, cleaned: dict[str, Any]) -> None:
        status = cleaned.get("status")
        if status and status != self.incident.status:
            self.add_error(
                "status",
                f"An internal level change keeps the status ({self.incident.get_status_display()}); "
                "post a public update to change it.",
            )
        if (cleaned.get("body") or "").strip():
            self.add_error(
                "body",
                "An internal level change posts no public message: empty it, or choose a public update.",
            )


class UpdateEditForm(forms.Form):
    body = forms.CharField(
        label="Public message",
        widget=_markdown_area(8),
        help_text="Markdown. The corrected text replaces the public one; the previous text is kept "
        "in the history below, the timeline marks the update as edited, and nobody is notified again.",
    )
