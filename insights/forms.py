"""The insights page's filter: a GET form, so every view of the data has its own URL."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

from insights import metrics
from insights.scope import ScopeChoices


class InsightsFilterForm(forms.Form):
    scope = forms.ChoiceField(label="Products", required=False)
    by = forms.ChoiceField(
        label="Per",
        required=False,
        choices=[(metrics.MONTH, "Month (last 12)"), (metrics.QUARTER, "Quarter (last 8)")],
    )
    until = forms.CharField(
        label="Up to (month)",
        required=False,
        max_length=7,
        help_text="YYYY-MM; empty for the current month.",
        widget=forms.TextInput(attrs={"inputmode": "numeric", "placeholder": "YYYY-MM", "size": 8}),
    )

    def __init__(self, *args: Any, choices: ScopeChoices, today: date, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scope_choices = choices
        self.today = today
        scope = self.fields["scope"]
        assert isinstance(scope, forms.ChoiceField)
        scope.choices = choices.options()

    def clean_scope(self) -> str:
        return self.cleaned_data.get("scope") or "all"

    def clean_by(self) -> str:
        return self.cleaned_data.get("by") or metrics.MONTH

    def clean_until(self) -> date:
        text = (self.cleaned_data.get("until") or "").strip()
        if not text:
            return self.today
        try:
            year, month = text.split("-")
            if len(year) != 4 or len(month) != 2:
                raise ValueError(text)
            value = date(int(year), int(month), 1)
        except ValueError:
            raise forms.ValidationError("Write the month as YYYY-MM, e.g. 2026-10.") from None
        if value.year < 1970 or value > self.today:
            raise forms.ValidationError("Pick a month between 1970 and this month.")
        return value
