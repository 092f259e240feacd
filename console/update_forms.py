"""The update form of the console (console/update_views.py); shared field helpers live
in console/forms.py."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms import (
    IMPACT_CHOICES,
    LEVELS,
    Status,
    _markdown_area,
    level_field_name,
    zoned_datetime_field,
)
from incidents.models import Incident, Location, Product
from incidents.selectors import ImpactTarget


class UpdateForm(forms.Form):
    status = forms.ChoiceField()
    body = forms.CharField(label="Public message", widget=_markdown_area())
    display_at = zoned_datetime_field(
        "Time of the update", help_text="Empty: now. Level changes take effect at this time."
    )
    impact = forms.ChoiceField(
        label="Overall impact",
        choices=IMPACT_CHOICES,
        required=False,
        help_text="What the page banner shows while the incident is open; by default the worst level sets it.",
    )
    add_product = forms.ModelChoiceField(
        label="Also affected: product",
        queryset=Product.objects.order_by("name"),
        required=False,
        empty_label="None",
    )
    add_location = forms.ModelChoiceField(
        label="In location",
        queryset=Location.objects.order_by("name"),
        required=False,
        empty_label="All locations",
    )
    add_level = forms.ChoiceField(label="At level", choices=LEVELS[1:], required=False)
    notify = forms.BooleanField(label="Notify subscribers", required=False, initial=True)

    def __init__(self, *args: Any, incident: Incident, targets: list[ImpactTarget], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        allowed = Incident.MAINTENANCE_STATUSES if incident.is_maintenance else Incident.INCIDENT_STATUSES
        status_field = self.fields["status"]
        assert isinstance(status_field, forms.ChoiceField)
        status_field.choices = [(s.value, s.label) for s in allowed if s != Status.POSTMORTEM]
        self.fields["impact"].initial = ""
        self.targets: list[tuple[ImpactTarget, forms.BoundField]] = []
        for target in targets:
            name = level_field_name(target.product, target.location)
            where = target.location.label if target.location else "all locations"
            self.fields[name] = forms.ChoiceField(
                label=f"{target.product.name} ({where})", choices=LEVELS, initial=target.level
            )
            self.targets.append((target, self[name]))

    def levels(self) -> list[tuple[Product, Location | None, str]]:
        chosen = [(t.product, t.location, self.cleaned_data[f.name]) for t, f in self.targets]
        product = self.cleaned_data.get("add_product")
        if product is not None:
            chosen.append((product, self.cleaned_data.get("add_location"), self.cleaned_data["add_level"]))
        return chosen

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        product = cleaned.get("add_product")
        if product is not None and not cleaned.get("add_level"):
            self.add_error("add_level", "Choose the level of the added product.")
        if product is not None:
            location = cleaned.get("add_location")
            if any(t.product == product and t.location == location for t, _ in self.targets):
                self.add_error("add_product", "This product is already listed above; set its level there.")
        return cleaned
