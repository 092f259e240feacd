"""The console's form for an SLI source (measurements room)."""

from __future__ import annotations

from django import forms

from incidents.models import Location, Product
from measurements.models import SliKind, SliSource


class SliSourceForm(forms.Form):
    product = forms.ModelChoiceField(
        queryset=Product.objects.filter(archived_at__isnull=True).order_by("position", "name")
    )
    location = forms.ModelChoiceField(
        queryset=Location.objects.order_by("name"),
        required=False,
        empty_label="Everywhere",
        help_text="Empty: the product everywhere. A location’s own source wins over its parent’s.",
    )
    base_url = forms.CharField(
        label="Prometheus URL",
        max_length=200,
        help_text="Its base URL, e.g. http://prometheus.internal:9090 (read with /api/v1/query_range).",
    )
    kind = forms.ChoiceField(choices=SliKind.choices, widget=forms.RadioSelect, label="What the queries give")
    errors_query = forms.CharField(
        required=False,
        max_length=500,
        label="Errors query",
        help_text="Failed valid requests per period, e.g. sum(increase(http_errors_total{selector}[{window}])).",
    )
    valid_query = forms.CharField(
        required=False,
        max_length=500,
        label="Valid requests query",
        help_text="Valid requests per period, e.g. sum(increase(http_requests_total{selector}[{window}])).",
    )
    error_rate_query = forms.CharField(
        required=False,
        max_length=500,
        label="Error-rate query",
        help_text="For the error-rate kind: percent of valid requests failing.",
    )
    label_selector = forms.CharField(
        required=False,
        max_length=200,
        help_text='Put in place of {selector}, e.g. location="us-central1",service="storage". {window} becomes the period (5m).',
    )
    enabled = forms.BooleanField(required=False, initial=True, help_text="Disabled sources are not read.")

    @staticmethod
    def initial_for(source: SliSource) -> dict[str, object]:
        return {name: getattr(source, name) for name in SliSourceForm.base_fields}
