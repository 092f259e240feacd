"""Console forms. They parse and check the shape of input; the rules run in the services,
whose `ValidationError`s are put back on these forms (core.admin.add_validation_errors).

Times are typed in settings.DISPLAY_TIME_ZONE: the views activate that zone, so Django's
DateTimeField reads a typed time in it and the service receives an aware UTC time.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from console.models import MessageTemplate
from incidents.models import ImpactWindow, Incident, Location, Product
from incidents.selectors import PRODUCT_STATUS_LABELS, ImpactTarget

Status = Incident.Status
DATETIME_FORMAT = "%Y-%m-%dT%H:%M"
_DATETIME_WIDGET = forms.DateTimeInput(attrs={"type": "datetime-local"}, format=DATETIME_FORMAT)
OPERATIONAL = "operational"
LEVELS = [(level, PRODUCT_STATUS_LABELS[level]) for level in (OPERATIONAL, *ImpactWindow.Level.values)]
IMPACT_CHOICES = [("", "Follow the levels"), *Incident.Impact.choices]


def zoned_datetime_field(label: str, *, help_text: str = "") -> forms.DateTimeField:
    return forms.DateTimeField(
        label=f"{label} ({settings.DISPLAY_TIME_ZONE})",
        required=False,
        widget=_DATETIME_WIDGET,
        input_formats=[DATETIME_FORMAT, "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"],
        help_text=help_text,
    )


def _markdown_area(rows: int = 5) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows, "data-preview": "1"})


def level_field_name(product: Product, location: Location | None) -> str:
    return f"level_{product.pk}_{location.pk if location else 0}"


class DeclareForm(forms.Form):
    title = forms.CharField(max_length=200)
    status = forms.ChoiceField(
        choices=[(s.value, s.label) for s in (Status.INVESTIGATING, Status.IDENTIFIED, Status.MONITORING)],
        initial=Status.INVESTIGATING,
    )
    started_at = zoned_datetime_field(
        "Impact began", help_text="Empty: now. Every product's impact window starts here."
    )
    locations = forms.ModelMultipleChoiceField(
        queryset=Location.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Where the affected products are impaired. None ticked: all locations.",
    )
    impact = forms.ChoiceField(
        label="Overall impact",
        choices=IMPACT_CHOICES,
        required=False,
        help_text="What the page banner shows while the incident is open; by default the worst level sets it.",
    )
    body = forms.CharField(
        label="First public message",
        widget=_markdown_area(),
        help_text="Markdown. The first entry of the public timeline; subscribers receive it.",
    )
    notify = forms.BooleanField(label="Notify subscribers", required=False, initial=True)

    def __init__(self, *args: Any, groups: list[tuple[str, list[Product]]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups: list[tuple[str, list[tuple[Product, forms.BoundField]]]] = []
        choices = [("", "Not affected"), *LEVELS[1:]]
        for group, products in groups:
            rows = []
            for product in products:
                name = level_field_name(product, None)
                self.fields[name] = forms.ChoiceField(label=product.name, choices=choices, required=False)
                rows.append((product, self[name]))
            self.groups.append((group, rows))

    def affected(self) -> list[tuple[Product, str]]:
        return [
            (product, self.cleaned_data[field.name])
            for _, rows in self.groups
            for product, field in rows
            if self.cleaned_data.get(field.name)
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.errors and not self.affected():
            raise forms.ValidationError("Choose a level for at least one affected product.")
        return cleaned


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


class TemplateForm(forms.Form):
    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=MessageTemplate.Kind.choices, widget=forms.RadioSelect)
    title = forms.CharField(
        max_length=200, required=False, help_text="The incident title (new-incident templates only)."
    )
    status = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Keep the form's status"),
            *[(s.value, s.label) for s in Incident.INCIDENT_STATUSES if s != Status.POSTMORTEM],
        ],
    )
    body = forms.CharField(label="Public message", widget=_markdown_area(6), help_text="Markdown.")
