"""Forms parse input only; the rules are in services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from incidents.selectors import products_public
from subscriptions.models import HOOK_KINDS, Subscriber
from subscriptions.webhooks import validate_webhook_url

SCOPE_CHOICES = [("all", "All products"), ("some", "Only the products I choose")]


class ProductChoiceForm(forms.Form):
    scope = forms.ChoiceField(
        choices=SCOPE_CHOICES, initial="all", widget=forms.RadioSelect, label="Notify me about"
    )
    products = forms.ModelMultipleChoiceField(
        queryset=products_public(), required=False, widget=forms.CheckboxSelectMultiple, label="Products"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("scope") == "some" and not data.get("products"):
            self.add_error("products", "Choose at least one product, or all of them.")
        elif data.get("scope") == "all" and data.get("products"):
            # Ticked products under "All products" used to subscribe to everything without
            # a word: the form must do what it shows, so ask instead of guessing.
            self.add_error(
                "scope",
                "You ticked some products but chose “All products”. Choose “Only the products I "
                "choose” to get just those, or untick them to get every product.",
            )
        return data

    @property
    def all_products(self) -> bool:
        return self.cleaned_data.get("scope") == "all"


class SubscribeForm(ProductChoiceForm):
    kind = forms.ChoiceField(
        choices=Subscriber.Kind.choices, initial=Subscriber.Kind.EMAIL, widget=forms.RadioSelect, label="Send"
    )
    email = forms.EmailField(
        max_length=254,
        label="Email address",
        help_text="For a webhook, the address of whoever looks after it.",
    )
    url = forms.URLField(
        max_length=500,
        required=False,
        assume_scheme="https",
        label="Webhook URL",
        help_text="A webhook receives a signed JSON POST per event; for Slack or Teams, paste the channel's incoming-webhook URL.",
    )
    payload_format = forms.ChoiceField(
        choices=Subscriber.Format.choices,
        initial=Subscriber.Format.NATIVE,
        required=False,
        label="Webhook payload",
        help_text="Statuspage-compatible: the JSON shape Statuspage sends its webhook subscribers.",
    )

    field_order = ["kind", "email", "url", "payload_format", "scope", "products"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("kind") != Subscriber.Kind.WEBHOOK:
            # Only a generic webhook has a choice of shape; Slack and Teams get their own.
            data["payload_format"] = Subscriber.Format.NATIVE
        if data.get("kind") in HOOK_KINDS:
            if not data.get("url"):
                self.add_error("url", "A webhook or channel needs its incoming-webhook URL.")
            else:
                # Checked here too (the service checks again), so that a refused URL is
                # reported even when the per-address limit skips the service call.
                try:
                    data["url"] = validate_webhook_url(data["url"])
                except ValidationError as exc:
                    self.add_error("url", exc.messages)
        return data


class ManageForm(ProductChoiceForm):
    pass
