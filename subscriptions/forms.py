"""Forms parse input only; the rules are in services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from core.timezones import ZONE_REGIONS, zone_names
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
        choices=SCOPE_CHOICES,
        initial="all",
        widget=forms.RadioSelect,
        label=_("Notify me about"),
        error_messages={"required": _("Choose all products, or only some.")},
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


def zone_choices() -> list[tuple[str, Any]]:
    """The zones grouped by region, each named by its place ("Europe" > "Paris"); the
    zones outside a region (UTC, a display zone such as US/Pacific) first, ungrouped."""
    loose: list[tuple[str, Any]] = []
    regions: dict[str, list[tuple[str, str]]] = {}
    for zone in zone_names():
        region, _slash, place = zone.partition("/")
        if region in ZONE_REGIONS:
            regions.setdefault(region, []).append((zone, place.replace("_", " ")))
        else:
            loose.append((zone, zone.replace("_", " ")))
    return loose + list(regions.items())


def zone_field() -> forms.ChoiceField:
    """A select of IANA zones; empty (an old page, a script) keeps the default."""
    return forms.ChoiceField(
        choices=zone_choices,
        required=False,
        label=_("Time zone"),
        help_text=_("Times in the emails are written in this zone."),
        error_messages={"invalid_choice": _("Choose a time zone from the list.")},
    )


# Per channel: the URL field's label and help (email has no URL field).
_URL_TEXT: dict[str, tuple[Any, Any]] = {
    Subscriber.Kind.WEBHOOK: (
        _("Webhook URL"),
        _("Each event is a signed JSON POST to this https address."),
    ),
    Subscriber.Kind.SLACK: (
        _("Slack incoming-webhook URL"),
        _("In Slack, add an incoming webhook to the channel and paste its URL (https://hooks.slack.com/…)."),
    ),
    Subscriber.Kind.TEAMS: (
        _("Teams incoming-webhook URL"),
        _(
            "In Teams, add a Workflows webhook (or an incoming-webhook connector) to the channel and paste its URL."
        ),
    ),
}


class SubscribeForm(ProductChoiceForm):
    """The fields of one channel: `channel` is the kind the page shows (the POST's
    hidden `kind`), so a page never shows, and a POST never reads, another's fields."""

    kind = forms.ChoiceField(choices=Subscriber.Kind.choices, widget=forms.HiddenInput, label=_("Send"))
    email = forms.EmailField(
        max_length=254, label=_("Email address"), error_messages={"required": _("Enter your email address.")}
    )
    url = forms.URLField(max_length=500, required=False, assume_scheme="https")
    payload_format = forms.ChoiceField(
        choices=Subscriber.Format.choices,
        initial=Subscriber.Format.NATIVE,
        required=False,
        label=_("Webhook payload"),
        help_text=_("Statuspage-compatible: the JSON shape Statuspage sends its webhook subscribers."),
    )
    time_zone = zone_field()

    field_order = ["kind", "url", "email", "payload_format", "time_zone", "scope", "products"]

    def __init__(self, *args: Any, channel: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.channel = channel
        if channel == Subscriber.Kind.EMAIL:
            del self.fields["url"], self.fields["payload_format"]
            self.fields["email"].help_text = _("We send a link to confirm the subscription here first.")
            return
        del self.fields["time_zone"]
        if channel != Subscriber.Kind.WEBHOOK:
            del self.fields["payload_format"]
        self.fields["url"].label, self.fields["url"].help_text = _URL_TEXT[channel]
        self.fields["email"].label = _("Your email address")
        self.fields["email"].help_text = _(
            "We send the link to confirm the subscription here, and tell you if deliveries keep failing."
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = data.get("kind")
        if kind != Subscriber.Kind.WEBHOOK:
            # Only a generic webhook has a choice of shape; Slack and Teams get their own.
            data["payload_format"] = Subscriber.Format.NATIVE
        if kind in HOOK_KINDS:
            if not data.get("url"):
                self.add_error("url", _("A webhook or channel needs its incoming-webhook URL."))
            else:
                # Checked here too (the service checks again), so that a refused URL is
                # reported even when the per-address limit skips the service call.
                try:
                    data["url"] = validate_webhook_url(data["url"], kind=kind)
                except ValidationError as exc:
                    self.add_error("url", exc.messages)
        return data


class ManageForm(ProductChoiceForm):
    # Optional: a manage form posted without it (an old page) keeps the language.
    language = forms.ChoiceField(
        choices=settings.LANGUAGES,
        required=False,
        label=_("Email language"),
        help_text=_("The language of the emails we send you."),
    )
    # Optional like the language; email subscribers only (a hook's messages are not theirs
    # to write times in).
    time_zone = zone_field()

    def __init__(self, *args: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kind != Subscriber.Kind.EMAIL:
            del self.fields["time_zone"]
        if kind in (Subscriber.Kind.SLACK, Subscriber.Kind.TEAMS):
            self.fields["language"].label = _("Language")
            self.fields["language"].help_text = _(
                "The language of the channel's messages and of the emails we send you."
            )


def error_links(form: forms.Form) -> list[tuple[str, str]]:
    """The form's errors in the order of its fields, each with the id of the element to
    fix (the page's error summary links there): an input, or the group of a choice."""
    links = [("", str(message)) for message in form.non_field_errors()]
    for name, field in form.fields.items():
        if isinstance(field.widget, forms.HiddenInput):
            target = "channel-choice"
        elif isinstance(field.widget, (forms.RadioSelect, forms.CheckboxSelectMultiple)):
            target = f"{name}-group"
        else:
            target = form[name].id_for_label
        links.extend((target, str(message)) for message in form[name].errors)
    return links
