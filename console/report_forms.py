"""The incident report's forms: the report's sections and its action-item rows.

They parse and check the shape of input; the rules run in incidents.services, whose
`ValidationError`s are put back on these forms (core.admin.add_validation_errors).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from console.forms import _markdown_area
from incidents.models import ActionItem, IncidentReport


class ReportForm(forms.Form):
    # The template a new report was started from (postmortems.ReportTemplate), if any.
    report_template = forms.IntegerField(widget=forms.HiddenInput, required=False)
    kind = forms.ChoiceField(
        label="Kind of report",
        choices=IncidentReport.Kind.choices,
        widget=forms.RadioSelect,
        initial=IncidentReport.Kind.FULL,
        help_text="A mini incident report is the short form for a small incident: a summary and "
        "what was done is enough. An incident report has all four sections.",
    )
    summary = forms.CharField(
        widget=_markdown_area(4), required=False, help_text="Markdown. Required to publish."
    )
    root_cause = forms.CharField(label="Root cause", widget=_markdown_area(4), required=False)
    remediation = forms.CharField(
        label="Remediation and prevention", widget=_markdown_area(4), required=False
    )
    impact_description = forms.CharField(
        label="Detailed description of impact", widget=_markdown_area(10), required=False
    )


def _staff_choices() -> Any:
    return get_user_model().objects.filter(is_staff=True, is_active=True).order_by("username")


class ActionItemForm(forms.Form):
    """One row of the report's action items: ActionItem.ROW_FIELDS, the row's id and the
    reason for dropping the item ("won't do"), which the service requires then."""

    field_order = ["item_id", *ActionItem.ROW_FIELDS, "reason"]
    item_id = forms.IntegerField(widget=forms.HiddenInput, required=False)
    title = forms.CharField(max_length=200, required=False)
    type = forms.ChoiceField(choices=ActionItem.Type.choices, initial=ActionItem.Type.PREVENT)
    priority = forms.ChoiceField(choices=ActionItem.Priority.choices, initial=ActionItem.Priority.P2)
    status = forms.ChoiceField(choices=ActionItem.Status.choices, initial=ActionItem.Status.OPEN)
    owner = forms.ModelChoiceField(queryset=_staff_choices(), required=False, empty_label="No owner")
    due_date = forms.DateField(label="Due", required=False, widget=forms.DateInput(attrs={"type": "date"}))
    tracker_url = forms.URLField(label="Tracker link", required=False, assume_scheme="https")
    is_public = forms.BooleanField(label="Listed on the public report", required=False)
    reason = forms.CharField(
        label="Reason for won't do",
        max_length=500,
        required=False,
        help_text="Required when the item is set to won't do; shown on the public report for public items.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        owner = self.fields["owner"]
        assert isinstance(owner, forms.ModelChoiceField)
        # Per form, not once at import: staff who joined since are listed.
        owner.queryset = _staff_choices()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.is_blank and self.has_changed():
            # A new row with a priority or an owner chosen but no title is not dropped unsaid.
            self.add_error("title", "Give the new action item a title, or leave its row as it was.")
        return cleaned

    @property
    def is_blank(self) -> bool:
        return not self.cleaned_data.get("item_id") and not (self.cleaned_data.get("title") or "").strip()


# Three empty rows: several items in one save, with no JavaScript to add rows.
ActionItemFormSet = forms.formset_factory(ActionItemForm, extra=3)
