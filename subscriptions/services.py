"""Writes of the subscriptions app: subscribe, confirm, change products, unsubscribe.

The subscribe request never reveals whether an address is known: the caller shows the
same page whatever happens here, and the only visible effect (an email) goes to the
address itself. A new or unconfirmed address gets a confirmation link; a confirmed one
gets a link to its settings, and nothing about it changes until that link is used.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from core import roles
from core.i18n import clean_language
from core.text import clean_single_line
from core.timezones import clean_zone
from incidents.models import Product
from outbox.models import OutboundMessage
from subscriptions import emails
from subscriptions.models import HOOK_KINDS, Subscriber, new_webhook_secret
from subscriptions.webhooks import validate_webhook_url

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class SubscriberConflict(ValidationError):
    """A write the subscriber's state refuses (subscribed already, not a generic webhook,
    disabled): not bad input, so the API answers 409."""


def clean_email(value: str) -> str:
    """One plain address; the domain is case-insensitive, so it is stored lower-case."""
    value = clean_single_line(value, field="email", max_length=254)
    try:
        validate_email(value)
    except ValidationError:
        raise ValidationError({"email": _("Enter a valid email address.")}) from None
    if any(ch in value for ch in ",;<>\"'() "):
        raise ValidationError({"email": _("Enter a single plain email address.")})
    local, _at, domain = value.rpartition("@")
    return f"{local}@{domain.lower()}"


def mailbox_key(email: str) -> str:
    """The mailbox an address delivers to, for limits: lower-case, `+tag` dropped.

    `Ops+1@Example.com` and `ops+2@example.com` reach one inbox, so they share one
    per-address limit. Dots stay: only some providers ignore them (Gmail does, most do
    not), and merging distinct mailboxes would let one person's requests throttle another.
    """
    local, _at, domain = email.strip().lower().rpartition("@")
    return f"{local.split('+', 1)[0]}@{domain}"


def staff_action(kind: str) -> str:
    """The role action a staff write on a subscriber of `kind` needs."""
    return "webhook.manage" if kind in HOOK_KINDS else "subscriber.manage"


def _clean_products(products: Iterable[Product]) -> list[Product]:
    chosen = list(products)
    if any(not p.is_public for p in chosen):
        raise ValidationError({"products": _("Choose among the products on the status page.")})
    return chosen


def _resend_bucket(*, email: str, kind: str, url: str) -> str:
    # At most one confirmation (or "already subscribed") email per mailbox and target per
    # period, enforced by the outbox's unique key: this holds even when the cache-based
    # rate limit fails open, and plus-tagged spellings of one mailbox share it.
    period = int(time.time()) // max(1, settings.SUBSCRIBE_CONFIRM_RESEND_SECONDS)
    target = hashlib.sha256(f"{mailbox_key(email)}\n{kind}\n{url}".encode()).hexdigest()[:32]
    return f"{target}:{period}"


@transaction.atomic
def subscriber_request(
    *,
    email: str,
    kind: str = Subscriber.Kind.EMAIL,
    url: str = "",
    all_products: bool = True,
    products: Iterable[Product] = (),
    payload_format: str = Subscriber.Format.NATIVE,
    language: str = "en",
    time_zone: str = "",
) -> None:
    """Handle a subscribe form. Returns nothing on purpose: the answer must not differ.

    `language` is the language the emails are written in (the page's, when the form was
    sent) and `time_zone` the zone of their times (empty: the display zone); a confirmed
    subscriber keeps its own until it changes them from the manage page.
    """
    email = clean_email(email)
    language = clean_language(language)
    time_zone = clean_zone(time_zone or settings.DISPLAY_TIME_ZONE) if kind == Subscriber.Kind.EMAIL else ""
    if kind not in Subscriber.Kind.values:
        raise ValidationError({"kind": _("Choose email, webhook, Slack or Teams.")})
    url = validate_webhook_url(url, kind=kind) if kind in HOOK_KINDS else ""
    if payload_format not in Subscriber.Format.values or (
        payload_format != Subscriber.Format.NATIVE and kind != Subscriber.Kind.WEBHOOK
    ):
        raise ValidationError({"payload_format": _("Choose a payload format for a webhook.")})
    chosen = [] if all_products else _clean_products(products)
    if not all_products and not chosen:
        raise ValidationError({"products": _("Choose at least one product, or all of them.")})

    lookup: dict[str, Any] = {"kind": kind, "email__iexact": email, "url": url}
    subscriber = Subscriber.objects.select_for_update().filter(**lookup).first()
    if subscriber is None:
        try:
            # A savepoint: two identical requests racing end with one row, not an error.
            with transaction.atomic():
                subscriber = Subscriber.objects.create(
                    kind=kind,
                    email=email,
                    url=url,
                    all_products=all_products,
                    payload_format=payload_format,
                    language=language,
                    time_zone=time_zone,
                )
                subscriber.products.set(chosen)
        except IntegrityError:
            subscriber = Subscriber.objects.select_for_update().get(**lookup)

    bucket = _resend_bucket(email=email, kind=kind, url=url)
    if subscriber.is_confirmed:
        # Changing a confirmed subscription takes the manage link, which only the owner
        # of the address receives.
        emails.send_already_subscribed(subscriber=subscriber, key=f"subscription-known:{bucket}")
        return
    # Still unconfirmed: the latest request's choice is what will be confirmed.
    subscriber.all_products = all_products
    subscriber.language = language
    subscriber.time_zone = time_zone
    subscriber.save(update_fields=["all_products", "language", "time_zone", "updated_at"])
    subscriber.products.set(chosen)
    emails.send_confirmation(subscriber=subscriber, key=f"subscription-confirm:{bucket}")


@transaction.atomic
def subscriber_confirm(*, subscriber: Subscriber) -> Subscriber:
    """Confirm (idempotent: a second click keeps the first confirmation time)."""
    subscriber = Subscriber.objects.select_for_update().get(pk=subscriber.pk)
    if subscriber.confirmed_at is None:
        subscriber.confirmed_at = timezone.now()
        subscriber.save(update_fields=["confirmed_at", "updated_at"])
    return subscriber


@transaction.atomic
def subscriber_update_products(
    *,
    subscriber: Subscriber,
    all_products: bool,
    products: Iterable[Product] = (),
    language: str | None = None,
    time_zone: str | None = None,
) -> Subscriber:
    """The manage page's save: the products, and the emails' language and time zone when
    given (an email subscriber's: a hook's messages carry no times of its own choosing)."""
    subscriber = Subscriber.objects.select_for_update().get(pk=subscriber.pk)
    chosen = [] if all_products else _clean_products(products)
    if not all_products and not chosen:
        raise ValidationError({"products": _("Choose at least one product, or all of them.")})
    fields = ["all_products", "updated_at"]
    subscriber.all_products = all_products
    if language is not None:
        subscriber.language = clean_language(language)
        fields.append("language")
    if time_zone is not None and subscriber.kind == Subscriber.Kind.EMAIL:
        subscriber.time_zone = clean_zone(time_zone)
        fields.append("time_zone")
    subscriber.save(update_fields=fields)
    subscriber.products.set(chosen)
    return subscriber


@transaction.atomic
def subscriber_set_language(
    *, subscriber: Subscriber, language: str, actor: User | None = None
) -> Subscriber:
    """The language of the subscriber's emails (staff, from the admin or the API)."""
    roles.check(actor, "subscriber.manage")
    language = clean_language(language)
    subscriber = Subscriber.objects.select_for_update().get(pk=subscriber.pk)
    if subscriber.language != language:
        subscriber.language = language
        subscriber.save(update_fields=["language", "updated_at"])
    return subscriber


@transaction.atomic
def subscriber_reenable(*, subscriber: Subscriber, actor: User | None = None) -> Subscriber:
    """The owner (signed manage link: actor None) or staff turn a disabled webhook back on,
    with a fresh failure count."""
    roles.check(actor, "webhook.manage")
    subscriber = Subscriber.objects.select_for_update().get(pk=subscriber.pk)
    subscriber.disabled_at = None
    subscriber.disabled_reason = ""
    subscriber.failure_count = 0
    subscriber.save(update_fields=["disabled_at", "disabled_reason", "failure_count", "updated_at"])
    return subscriber


@transaction.atomic
def subscriber_rotate_secret(*, subscriber: Subscriber, actor: User | None = None) -> Subscriber:
    """A new `whsec_` secret (moving a secret of the old form to Standard Webhooks). What
    is still queued for the webhook is signed with the new one from now on."""
    roles.check(actor, "webhook.manage")
    subscriber = Subscriber.objects.select_for_update().get(pk=subscriber.pk)
    if subscriber.kind != Subscriber.Kind.WEBHOOK:
        raise SubscriberConflict({"kind": _("Only a generic webhook has a signing secret.")})
    subscriber.secret = new_webhook_secret()
    subscriber.save(update_fields=["secret", "updated_at"])
    OutboundMessage.objects.filter(ref=subscriber.outbox_ref, state=OutboundMessage.State.PENDING).update(
        secret=subscriber.secret, updated_at=timezone.now()
    )
    return subscriber


@transaction.atomic
def subscriber_unsubscribe(*, subscriber: Subscriber | None) -> int:
    """Forget the subscriber and stop what is still queued for it.

    Harmless to repeat: a second call (a replayed link, a mail client retrying the
    one-click POST) finds nothing and changes nothing. Returns the messages cancelled.
    """
    if subscriber is None:
        return 0
    ref = subscriber.outbox_ref
    deleted, _details = Subscriber.objects.filter(pk=subscriber.pk).delete()
    if not deleted:
        return 0
    # Rows already claimed by a worker may still go out; pending ones never will.
    return OutboundMessage.objects.filter(ref=ref, state=OutboundMessage.State.PENDING).update(
        state=OutboundMessage.State.CANCELLED, updated_at=timezone.now()
    )


@transaction.atomic
def subscriber_staff_save(*, subscriber: Subscriber, actor: User | None) -> Subscriber:
    """Staff create or change a subscriber (the admin): the address and a hook's URL are
    held to the subscribe form's rules; hooks need webhook.manage, emails subscriber.manage."""
    roles.check(actor, staff_action(subscriber.kind))
    if subscriber.pk is not None:
        stored = Subscriber.objects.filter(pk=subscriber.pk).values_list("kind", flat=True).first()
        if stored is not None:
            roles.check(actor, staff_action(stored))
    subscriber.email = clean_email(subscriber.email)
    if subscriber.kind in HOOK_KINDS:
        subscriber.url = validate_webhook_url(subscriber.url, kind=subscriber.kind)
    subscriber.save()
    return subscriber


def subscriber_staff_delete(*, subscriber: Subscriber, actor: User | None) -> int:
    """Staff remove a subscriber (the admin): what is queued for it is cancelled too."""
    roles.check(actor, staff_action(subscriber.kind))
    return subscriber_unsubscribe(subscriber=subscriber)


@transaction.atomic
def subscriber_staff_create(
    *,
    actor: User | None,
    email: str,
    kind: str = Subscriber.Kind.EMAIL,
    url: str = "",
    all_products: bool = True,
    products: Iterable[Product] = (),
    payload_format: str = Subscriber.Format.NATIVE,
    language: str = "en",
    time_zone: str = "",
    confirmed: bool = False,
) -> Subscriber:
    """Staff add a subscriber (the API). By default exactly as the subscribe form does
    (a confirmation email; nothing is sent to it before the link is used); `confirmed`
    imports it confirmed without any email, as the admin's save does. An address (and
    URL) subscribed already is refused, naming `email`."""
    if kind not in Subscriber.Kind.values:
        raise ValidationError({"kind": _("Choose email, webhook, Slack or Teams.")})
    roles.check(actor, staff_action(kind))
    email = clean_email(email)
    url = validate_webhook_url(url, kind=kind) if kind in HOOK_KINDS else ""
    lookup: dict[str, Any] = {"kind": kind, "email__iexact": email, "url": url}
    if Subscriber.objects.filter(**lookup).exists():
        raise SubscriberConflict(
            {"email": _("This address is subscribed already (with this URL, for a hook).")}
        )
    if not confirmed:
        subscriber_request(
            email=email,
            kind=kind,
            url=url,
            all_products=all_products,
            products=products,
            payload_format=payload_format,
            language=language,
            time_zone=time_zone,
        )
        return Subscriber.objects.get(**lookup)
    chosen = [] if all_products else _clean_products(products)
    if not all_products and not chosen:
        raise ValidationError({"products": _("Choose at least one product, or all of them.")})
    if payload_format not in Subscriber.Format.values or (
        payload_format != Subscriber.Format.NATIVE and kind != Subscriber.Kind.WEBHOOK
    ):
        raise ValidationError({"payload_format": _("Choose a payload format for a webhook.")})
    subscriber = Subscriber(
        kind=kind,
        email=email,
        url=url,
        all_products=all_products,
        payload_format=payload_format,
        language=clean_language(language),
        time_zone=clean_zone(time_zone or settings.DISPLAY_TIME_ZONE)
        if kind == Subscriber.Kind.EMAIL
        else "",
        confirmed_at=timezone.now(),
    )
    subscriber = subscriber_staff_save(subscriber=subscriber, actor=actor)
    subscriber.products.set(chosen)
    return subscriber
