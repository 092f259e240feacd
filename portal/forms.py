from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from credits.models import Customer


class SignInForm(forms.Form):
    email = forms.EmailField(label=_("Work email address"), max_length=254)
    next = forms.CharField(required=False, widget=forms.HiddenInput, max_length=500)


class AccessForm(forms.Form):
    customer = forms.ModelChoiceField(queryset=Customer.objects.order_by("name"))
    domain = forms.CharField(required=False, max_length=253, help_text="Every address @ this domain.")
    email = forms.EmailField(required=False, help_text="Or one named contact.")


class OidcProviderForm(forms.Form):
    customer = forms.ModelChoiceField(queryset=Customer.objects.order_by("name"))
    domain = forms.CharField(max_length=253, help_text="Contacts @ this domain sign in at the provider.")
    issuer = forms.URLField(
        max_length=500, assume_scheme="https", help_text="Its discovery document is read when you add it."
    )
    client_id = forms.CharField(max_length=255)
    client_secret = forms.CharField(max_length=500, widget=forms.PasswordInput)


class PageWebhookForm(forms.Form):
    url = forms.URLField(
        label=_("Webhook URL"),
        max_length=500,
        assume_scheme="https",
        help_text=_("We POST a signed JSON document there for each event of this page."),
    )
