"""Forms parse input only; the rules are in services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from incidents.selectors import products_public
from subscriptions.models import HOOK_KINDS, Subscriber
from subscriptions.webhooks import validate_webhook_url

SCOPE_CHOICES = [("all", _("All products")), ("some", _("Only the products I choose"))]
# Primary keys are 64-bit: a larger number overflowed the database driver (a 500).
_PK_MAX = 2**63 - 1


class ProductChoiceField(forms.ModelMultipleChoiceField):
    """Product ids from the form, refused with a form error unless they are plausible
    primary keys, before any of them reaches the database."""

    def _check_values(self, value: Any) -> Any:
        for pk in value:
            text = str(pk).strip()
            if not text.isdigit() or not 1 <= int(text) <= _PK_MAX:
                raise ValidationError(
                    self.error_messages["invalid_choice"], code="invalid_choice", params={"value": text[:40]}
                )
        return super()._check_values(value)  # type: ignore[misc]


class ProductChoiceForm(forms.Form):
    scope = forms.ChoiceField(
        choices=SCOPE_CHOICES, initial="all", widget=forms.RadioSelect, label=_("Notify me about")
    )
    products = ProductChoiceField(
        queryset=products_public(), required=False, widget=forms.CheckboxSelectMultiple, label=_("Products")
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("scope") == "some" and not data.get("products"):
            self.add_error("products", _("Choose at least one product, or all of them."))
        elif data.get("scope") == "all" and data.get("products"):
            # Ticked products under "All products" used to subscribe to everything without
            # a word: the form must do what it shows, so ask instead of guessing.
            self.add_error(
                "scope",
                _(
                    "You ticked some products but chose “All products”. Choose “Only the products I "
                    "choose” to get just those, or untick them to get every product."
                ),
            )
        return data

    @property
    def all_products(self) -> bool:
        return self.cleaned_data.get("scope") == "all"


class SubscribeForm(ProductChoiceForm):
    kind = forms.ChoiceField(
        choices=Subscriber.Kind.choices,
        initial=Subscriber.Kind.EMAIL,
        widget=forms.RadioSelect,
        label=_("Send"),
    )
    email = forms.EmailField(
        max_length=254,
        label=_("Email address"),
        help_text=_("For a webhook, the address of whoever looks after it."),
    )
    url = forms.URLField(
        max_length=500,
        required=False,
        assume_scheme="https",
        label=_("Webhook URL"),
        help_text=_(
            "A webhook receives a signed JSON POST per event; for Slack or Teams, paste the channel's "
            "incoming-webhook URL."
        ),
    )
    payload_format = forms.ChoiceField(
        choices=Subscriber.Format.choices,
        initial=Subscriber.Format.NATIVE,
        required=False,
        label=_("Webhook payload"),
        help_text=_("Statuspage-compatible: the JSON shape Statuspage sends its webhook subscribers."),
    )

    field_order = ["kind", "email", "url", "payload_format", "scope", "products"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("kind") != Subscriber.Kind.WEBHOOK:
            # Only a generic webhook has a choice of shape; Slack and Teams get their own.
            data["payload_format"] = Subscriber.Format.NATIVE
        if data.get("kind") in HOOK_KINDS:
            if not data.get("url"):
                self.add_error("url", _("A webhook or channel needs its incoming-webhook URL."))
            else:
                # Checked here too (the service checks again), so that a refused URL is
                # reported even when the per-address limit skips the service call.
                try:
                    data["url"] = validate_webhook_url(data["url"], kind=data["kind"])
                except ValidationError as exc:
                    self.add_error("url", exc.messages)
        return data


class ManageForm(ProductChoiceForm):
    # Optional: a manage form posted without it (an old page) keeps the language.
    language = forms.ChoiceField(
        choices=settings.LANGUAGES, required=False, label=_("Email language"), widget=forms.Select
    )
