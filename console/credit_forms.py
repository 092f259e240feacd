"""Forms of the console's credits room. They parse the shape of input; the rules (which
months may be computed) are the service's, whose errors go back on the form."""

from __future__ import annotations

from django import forms

from credits import sla


class ComputeForm(forms.Form):
    period = forms.CharField(
        label="Compute credits for",
        max_length=7,
        # A month picker where the browser has one; elsewhere a text box that takes YYYY-MM.
        widget=forms.TextInput(attrs={"type": "month", "placeholder": "YYYY-MM", "pattern": r"\d{4}-\d{2}"}),
        help_text="A calendar month, YYYY-MM. Computing again refreshes the notices awaiting review; "
        "approved, queued and sent ones are never changed.",
    )

    def clean_period(self) -> str:
        try:
            return str(sla.Period.parse(self.cleaned_data["period"]))
        except ValueError:
            raise forms.ValidationError("Give a month as YYYY-MM, for example 2026-10.") from None
