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
from incidents.selectors import PRODUCT_STATUS_LABELS

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


def locations_field_name(product: Product) -> str:
    return f"locations_{product.pk}"


class DeclareRow:
    """One product on the Declare form: its level and the locations it is confined to."""

    def __init__(self, product: Product, level: forms.BoundField, locations: forms.BoundField) -> None:
        self.product = product
        self.level = level
        self.locations = locations

    @property
    def ticked(self) -> list[str]:
        """The labels of the ticked locations, as the form was sent (none: all locations)."""
        return [str(box.choice_label) for box in self.locations.subwidgets if box.data["selected"]]


class DeclareForm(forms.Form):
    title = forms.CharField(max_length=200)
    status = forms.ChoiceField(
        choices=[(s.value, s.label) for s in (Status.INVESTIGATING, Status.IDENTIFIED, Status.MONITORING)],
        initial=Status.INVESTIGATING,
    )
    started_at = zoned_datetime_field(
        "Impact began", help_text="Empty: now. Every product's impact window starts here."
    )
    detected_at = zoned_datetime_field(
        "Detected",
        help_text="Optional: when we learned of it (an alert, a report). Not before impact began. "
        "Insights measure the time to the first public update from here.",
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
    first_update_at = zoned_datetime_field(
        "Backdate the first message to",
        help_text="Optional, and only when the message really went out earlier (say, on social media): "
        "not before impact began. Empty: it is shown at the time you publish it. Staff always see "
        "the real posting time.",
    )
    notify = forms.BooleanField(label="Notify subscribers", required=False, initial=True)
    # The public id of the recent incident with the same title that the person saw named in
    # the warning and chose to declare a new incident anyway (a ticked checkbox).
    confirm_duplicate_of = forms.CharField(required=False, max_length=40)

    def __init__(self, *args: Any, groups: list[tuple[str, list[Product]]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Set by the view when the service warned of a recent incident with this title.
        self.duplicate: Incident | None = None
        self.locations = {str(loc.pk): loc for loc in Location.objects.order_by("name")}
        location_choices = [(pk, loc.label) for pk, loc in self.locations.items()]
        self.groups: list[tuple[str, list[DeclareRow]]] = []
        choices = [("", "Not affected"), *LEVELS[1:]]
        for group, products in groups:
            rows = []
            for product in products:
                level = level_field_name(product, None)
                where = locations_field_name(product)
                self.fields[level] = forms.ChoiceField(label=product.name, choices=choices, required=False)
                self.fields[where] = forms.MultipleChoiceField(
                    label=f"Locations of {product.name}",
                    choices=location_choices,
                    required=False,
                    widget=forms.CheckboxSelectMultiple,
                )
                rows.append(DeclareRow(product, self[level], self[where]))
            self.groups.append((group, rows))

    def affected(self) -> list[tuple[Product, str, list[Location | None]]]:
        """Each affected product with its level and locations ([None]: all locations)."""
        data = self.cleaned_data
        return [
            (row.product, data[row.level.name], self._where(data.get(row.locations.name)))
            for _, rows in self.groups
            for row in rows
            if data.get(row.level.name)
        ]

    def _where(self, ticked: list[str] | None) -> list[Location | None]:
        return [self.locations[pk] for pk in ticked] if ticked else [None]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # Every mistake at once: a product's locations without its level, and no product.
        rows = [row for _, group in self.groups for row in group]
        for row in rows:
            if cleaned.get(row.locations.name) and not cleaned.get(row.level.name):
                self.add_error(
                    row.level.name, f"Choose the level of {row.product.name}, or untick its locations."
                )
        if not any(cleaned.get(row.level.name) for row in rows):
            self.add_error(None, "Choose a level for at least one affected product.")
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
