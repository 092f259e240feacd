"""Forms of the console's credits room. They parse the shape of input; the rules (which
months may be computed) are the service's, whose errors go back on the form."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django import forms

from credits import sla
from credits.models import DowntimeSource


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


_TIER_LINE = re.compile(r"^\s*<?\s*(\d+(?:\.\d+)?)\s*%?\s*[:=,;]?\s*(\d+(?:\.\d+)?)\s*%?\s*$")


class PolicyVersionForm(forms.Form):
    """New terms of a policy from a day. Shape only here; the service checks the terms
    (ranges, tiers) and refuses a day that reaches a month already approved or sent."""

    effective_from = forms.DateField(
        label="Effective from",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The first day the new terms apply, in the policy's time zone. A month that spans "
        "this day is computed with each version for its own days.",
    )
    target = forms.DecimalField(
        label="Monthly uptime target (%)",
        max_digits=6,
        decimal_places=3,
        min_value=Decimal("0.001"),
        max_value=100,
    )
    tiers = forms.CharField(
        label="Credit tiers",
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        help_text='One tier a line: the uptime it applies below, then the credit, e.g. "99.9: 10".',
    )
    cap = forms.DecimalField(
        label="Cap per month",
        max_digits=8,
        decimal_places=2,
        min_value=0,
        required=False,
        help_text="Most credit per month across all incidents, in the policy's unit. Empty: no cap.",
    )
    min_downtime_minutes = forms.IntegerField(
        label="Shortest outage that counts (minutes)", min_value=0, max_value=2**31 - 1
    )
    exclude_maintenance = forms.BooleanField(label="Scheduled maintenance is not downtime", required=False)
    downtime_source = forms.ChoiceField(label="Downtime counted from", choices=DowntimeSource.choices)
    measured_down_above = forms.DecimalField(
        label="Measured: down above this error rate (%)",
        max_digits=6,
        decimal_places=3,
        min_value=0,
        max_value=100,
    )

    def clean_tiers(self) -> list[tuple[Decimal, Decimal]]:
        tiers = []
        for number, line in enumerate(self.cleaned_data["tiers"].splitlines(), start=1):
            if not line.strip():
                continue
            match = _TIER_LINE.match(line)
            if match is None:
                raise forms.ValidationError(
                    f'Line {number}: write the uptime threshold, then the credit, for example "99.9: 10".'
                )
            tiers.append((Decimal(match.group(1)), Decimal(match.group(2))))
        return tiers

    def changes(self) -> dict[str, Any]:
        """The versioned terms the form sets (all but the day and the tiers)."""
        return {k: v for k, v in self.cleaned_data.items() if k not in ("effective_from", "tiers")}


def tiers_text(tiers: list[list[str]]) -> str:
    return "\n".join(f"{Decimal(b).normalize():f}: {Decimal(c).normalize():f}" for b, c in tiers)
