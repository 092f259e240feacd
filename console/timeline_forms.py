"""The timeline editor's forms: one staff entry, and one link to another incident. They
check the shape of input; the rules run in postmortems.services."""

from __future__ import annotations

from django import forms

from console.forms import _markdown_area, zoned_datetime_field
from postmortems.models import LinkKind, Phase, Visibility


class TimelineEntryForm(forms.Form):
    entry_id = forms.IntegerField(widget=forms.HiddenInput, required=False)
    at = zoned_datetime_field("When")
    phase = forms.ChoiceField(choices=Phase.choices, initial=Phase.OTHER)
    visibility = forms.ChoiceField(
        choices=Visibility.choices,
        initial=Visibility.INTERNAL,
        help_text="Public entries appear on the published report's timeline.",
    )
    text = forms.CharField(widget=_markdown_area(3), help_text="Markdown. A deploy, a decision, a page sent.")


class IncidentLinkForm(forms.Form):
    kind = forms.ChoiceField(
        label="This incident is", choices=LinkKind.choices, initial=LinkKind.RECURRENCE_OF
    )
    other = forms.CharField(
        label="Other incident", max_length=12, help_text="Its id, as in its address (/incidents/<id>/)."
    )
