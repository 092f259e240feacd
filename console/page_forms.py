"""The console's form for an audience page (audiences room)."""

from __future__ import annotations

from django import forms

from audiences.models import Page
from credits.models import Customer
from incidents.models import Location, Product


class PageForm(forms.Form):
    title = forms.CharField(max_length=120)
    slug = forms.SlugField(max_length=60, help_text="The page is served at /p/<slug>/.")
    visibility = forms.ChoiceField(choices=Page.Visibility.choices, widget=forms.RadioSelect)
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Shown under the title (Markdown).",
    )
    products = forms.ModelMultipleChoiceField(
        queryset=Product.objects.filter(archived_at__isnull=True).order_by("position", "name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    locations = forms.ModelMultipleChoiceField(
        queryset=Location.objects.order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None ticked: every location of the products.",
    )
    customers = forms.ModelMultipleChoiceField(
        queryset=Customer.objects.order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Audience pages: whose contacts may read it.",
    )

    @staticmethod
    def initial_for(page: Page) -> dict[str, object]:
        return {
            "title": page.title,
            "slug": page.slug,
            "visibility": page.visibility,
            "intro": page.intro,
            "products": list(page.products.all()),
            "locations": list(page.locations.all()),
            "customers": list(page.customers.all()),
        }


class PageKeyForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="Who holds it, e.g. “Tailspin monitoring”.")
