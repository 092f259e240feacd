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
    host = forms.CharField(
        max_length=253,
        required=False,
        label="Host name",
        help_text="Optional: a host name that serves this page at / (it must also be in ALLOWED_HOSTS).",
    )
    allowed_networks = forms.CharField(
        required=False,
        label="Allowed networks",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="Optional: one address range per line (e.g. 203.0.113.0/24); "
        "readers from anywhere else get “not found”.",
    )

    def clean_allowed_networks(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["allowed_networks"].splitlines() if line.strip()]

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
            "host": page.host,
            "allowed_networks": "\n".join(page.allowed_networks),
        }


class PageKeyForm(forms.Form):
    label = forms.CharField(max_length=100, help_text="Who holds it, e.g. “Tailspin monitoring”.")
