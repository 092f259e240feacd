"""Subscriptions to one audience or internal page: who may hold one, subscribing,
unsubscribing and the signed one-click link. Design: docs/adr/0034-page-subscribers.md.

A subscriber is whoever signed in to read the page: a customer's contact (portal sign-in)
or a staff user. Signing in proved the address, so there is no confirmation email. Before
every delivery `may_receive` asks again whether that reader may still read the page:
access removed in the console, a customer taken off the page or a staff account turned
off stops the words at once, without waiting for anyone to unsubscribe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from audiences.models import Page
from credits.models import Customer
from outbox.models import OutboundMessage
from portal import selectors
from portal.models import PageSubscriber
from subscriptions.emails import absolute_url
from subscriptions.webhooks import validate_webhook_url

_SALT = "portal.page-unsubscribe"
GONE = 410
# Webhooks one reader may hold on one page.
MAX_WEBHOOKS = 10


@dataclass(frozen=True)
class Reader:
    """Who is signed in to subscribe: a customer's contact or a staff user."""

    email: str
    customer: Customer | None = None
    user: Any = None


class BadToken(Exception):
    """An unsubscribe link that is altered, expired or not one at all."""


def make_token(subscriber: PageSubscriber) -> str:
    return signing.TimestampSigner(salt=_SALT).sign(subscriber.token)


def unsubscribe_url(subscriber: PageSubscriber) -> str:
    """The one-click unsubscribe address (List-Unsubscribe), in the subscriber's language."""
    with translation.override(subscriber.language):
        return absolute_url(reverse("portal:page-unsubscribe", args=[make_token(subscriber)]))


def subscriber_for_token(token: str) -> PageSubscriber | None:
    """The subscriber a link names (None: it unsubscribed already), or BadToken."""
    try:
        value = signing.TimestampSigner(salt=_SALT).unsign(
            token, max_age=settings.SUBSCRIPTION_UNSUBSCRIBE_MAX_AGE
        )
    except signing.BadSignature:
        raise BadToken from None
    return PageSubscriber.objects.select_related("page").filter(token=value).first()


def may_receive(subscriber: PageSubscriber) -> bool:
    """Whether the reader who subscribed may still read the page."""
    page = subscriber.page
    if page.visibility == Page.Visibility.PUBLIC:
        return True
    user = subscriber.user
    if user is not None:
        return bool(user.is_active and user.is_staff)
    if page.visibility != Page.Visibility.AUDIENCE or subscriber.customer_id is None:
        return False
    customer = selectors.customer_for_email(subscriber.email)
    return (
        customer is not None
        and customer.pk == subscriber.customer_id
        and page.customers.filter(pk=customer.pk).exists()
    )


def reader_for_page(page: Page, *, customer: Customer | None, email: str, user: Any) -> Reader | None:
    """Who subscribes to `page` for this request: the customer's contact on a page of its
    customer, else a staff user with an address, else the contact on a public page."""
    staff = user is not None and user.is_active and user.is_staff and user.email
    contact_fits = customer is not None and (
        page.visibility == Page.Visibility.PUBLIC
        or (page.visibility == Page.Visibility.AUDIENCE and page.customers.filter(pk=customer.pk).exists())
    )
    if contact_fits:
        return Reader(email=email, customer=customer)
    if staff:
        return Reader(email=selectors.normalized(user.email), user=user)
    return None


def subscriptions_of(page: Page, reader: Reader) -> list[PageSubscriber]:
    return list(
        PageSubscriber.objects.filter(page=page, email__iexact=reader.email).order_by("kind", "url", "pk")
    )


def page_subscribe_email(*, page: Page, reader: Reader, language: str, time_zone: str = "") -> PageSubscriber:
    """Subscribe the reader's own address (again: the same row, its language updated)."""
    with transaction.atomic():
        subscriber = PageSubscriber.objects.filter(
            page=page, kind=PageSubscriber.Kind.EMAIL, email__iexact=reader.email
        ).first()
        if subscriber is None:
            subscriber = PageSubscriber(page=page, kind=PageSubscriber.Kind.EMAIL, email=reader.email)
        subscriber.customer = reader.customer
        subscriber.user = reader.user
        subscriber.language = language
        subscriber.time_zone = time_zone
        subscriber.full_clean(exclude=["secret"])
        subscriber.save()
    return subscriber


def page_subscribe_webhook(*, page: Page, reader: Reader, url: str, language: str) -> PageSubscriber:
    """A webhook owned by the reader; its deliveries are signed with its own secret."""
    url = validate_webhook_url(url)
    held = PageSubscriber.objects.filter(
        page=page, kind=PageSubscriber.Kind.WEBHOOK, email__iexact=reader.email
    )
    if held.count() >= MAX_WEBHOOKS:
        raise ValidationError({"url": _("Remove a webhook first: one address holds at most ten on a page.")})
    try:
        with transaction.atomic():
            subscriber = PageSubscriber(
                page=page,
                kind=PageSubscriber.Kind.WEBHOOK,
                email=reader.email,
                url=url,
                customer=reader.customer,
                user=reader.user,
                language=language,
            )
            subscriber.full_clean(exclude=["secret"], validate_constraints=False)
            subscriber.save()
    except IntegrityError:
        raise ValidationError({"url": _("This webhook is subscribed to this page already.")}) from None
    return subscriber


@transaction.atomic
def page_unsubscribe(*, subscriber: PageSubscriber | None) -> int:
    """Forget the subscriber and cancel what is still queued for it; harmless to repeat.
    Returns the messages cancelled."""
    if subscriber is None:
        return 0
    ref = subscriber.outbox_ref
    deleted, _details = PageSubscriber.objects.filter(pk=subscriber.pk).delete()
    if not deleted:
        return 0
    return OutboundMessage.objects.filter(ref=ref, state=OutboundMessage.State.PENDING).update(
        state=OutboundMessage.State.CANCELLED, updated_at=timezone.now()
    )


def page_webhook_failed(message: Any) -> None:
    """Outbox on_failed handler of page webhooks: a receiver whose last answer was 410
    Gone asks for nothing more (Standard Webhooks), so its subscription ends."""
    from outbox.models import DeliveryAttempt

    ref = str(getattr(message, "ref", "") or "")
    if not ref.startswith("page-subscriber:"):
        return
    last = DeliveryAttempt.objects.filter(message_id=message.pk).order_by("-number", "-id").first()
    if last is None or last.status_code != GONE:
        return
    subscriber = PageSubscriber.objects.filter(pk=int(ref.split(":", 1)[1] or 0)).first()
    page_unsubscribe(subscriber=subscriber)
