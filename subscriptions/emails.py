"""Every email this app sends, built from a subject / text / HTML template triplet.

Templates live in templates/emails/: `<name>_subject.txt`, `<name>.txt` and
`<name>.html`. User text reaches them only as context values (so template syntax in a
title is shown literally) and Markdown only as the HTML stored when it was written
(`stored_html`). Each email is one outbox row with an idempotency key chosen by the caller, so it is queued once.

Every email is rendered in its recipient's language (`Subscriber.language`) and time
zone (`Subscriber.zone`), whatever the request or task that sends it has active:
`render_email` takes both and renders under them, and the times in a context are lazy
(`display_time_lazy`), so they are written in the language and zone of the render.
Notifications about one incident carry `In-Reply-To` / `References` to one id per
incident and subscriber (`thread_headers`), so mail clients show them as one thread.
"""

from __future__ import annotations

import hashlib
import re
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils import translation
from django.utils.functional import lazy
from django.utils.html import escape

from core.i18n import display_datetime
from core.text import site_title
from core.timezones import display_zone
from outbox import conf as outbox_conf
from outbox.services import EmailSpec, email_enqueue
from subscriptions.models import Subscriber
from subscriptions.tokens import Purpose, make_token

SUBSCRIBER_PURPOSE = "subscriptions.email"
ACTION_ITEM_PURPOSE = "subscriptions.action_item_reminder"

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class RenderedEmail:
    subject: str
    text: str
    html: str


def absolute_url(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


# The zone of the email being rendered (its recipient's); unset: the display zone.
_render_zone: ContextVar[ZoneInfo | None] = ContextVar("email_render_zone", default=None)


def display_time(value: datetime | None) -> str:
    """A time in the zone of the render (else the display zone), with the zone named
    (emails have no <time> element), in the active language: "2026-12-02 06:05 PST",
    "2 déc. 2026 à 15:05 CET"."""
    return display_datetime(value, _render_zone.get() or display_zone())


# For contexts built once and rendered in several languages: written when rendered.
display_time_lazy = lazy(display_time, str)


def render_email(
    name: str, context: dict[str, Any], *, language: str | None = None, zone: str | None = None
) -> RenderedEmail:
    """The subject, text and HTML of `name`, in `language` (default: the site's), its
    times in `zone` (default: the display zone)."""
    reset = _render_zone.set(ZoneInfo(zone) if zone else None)
    try:
        return _render(name, context, language=language)
    finally:
        _render_zone.reset(reset)


def _render(name: str, context: dict[str, Any], *, language: str | None) -> RenderedEmail:
    with translation.override(language or settings.LANGUAGE_CODE):
        # The site's title is translated ("Acme status", "État de Acme"): in the email's language.
        base = {
            "site_name": settings.SITE_NAME,
            "site_title": site_title(settings.SITE_NAME),
            "site_url": settings.SITE_URL,
            **context,
        }
        base["language"] = translation.get_language()
        # A subject is one line: template newlines and runs of spaces collapse to one space.
        subject = _WHITESPACE.sub(" ", render_to_string(f"emails/{name}_subject.txt", base)).strip()
        return RenderedEmail(
            subject=subject,
            text=render_to_string(f"emails/{name}.txt", base),
            html=render_to_string(f"emails/{name}.html", base),
        )


def subscriber_links(subscriber: Subscriber) -> dict[str, str]:
    # In the subscriber's language: a French subscriber's links open the French pages
    # (/fr/manage/...), an English one's the bare paths, whatever language the request
    # or task that sends the email has active.
    with translation.override(subscriber.language):
        return _subscriber_links(subscriber)


def _subscriber_links(subscriber: Subscriber) -> dict[str, str]:
    return {
        "confirm_url": absolute_url(
            reverse("subscriptions:confirm", args=[make_token(subscriber, Purpose.CONFIRM)])
        ),
        "manage_url": absolute_url(
            reverse("subscriptions:manage", args=[make_token(subscriber, Purpose.MANAGE)])
        ),
        "unsubscribe_url": absolute_url(
            reverse("subscriptions:unsubscribe", args=[make_token(subscriber, Purpose.UNSUBSCRIBE)])
        ),
    }


def subscriber_headers(unsubscribe_url: str) -> dict[str, str]:
    # RFC 8058: the mail client POSTs "List-Unsubscribe=One-Click" to the URL, with no
    # cookies and no page in between; the signed token in the URL is the authority.
    return {
        "List-Unsubscribe": f"<{unsubscribe_url}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        "Auto-Submitted": "auto-generated",
    }


def thread_headers(*, incident_public_id: str, subscriber: Subscriber) -> dict[str, str]:
    """Every notification about one incident replies to one id, so mail clients thread
    them: the id of the incident's thread in this subscriber's mailbox. Derived, not
    looked up; no message carries it as its own Message-ID (the outbox sets that from
    its key), and clients thread on a parent they never received. A digest of the
    subscriber's token rather than its id: ids would tell how many subscribers there are."""
    mailbox = hashlib.sha256(f"thread:{subscriber.token}".encode()).hexdigest()[:16]
    root = f"<incident-{incident_public_id}.{mailbox}@{outbox_conf.message_id_domain()}>"
    return {"In-Reply-To": root, "References": root}


# Stand-ins rendered into a shared copy of an email, then replaced per subscriber. Only
# letters, digits and hyphens: HTML escaping leaves them as they are.
_EMAIL_MARK = "subscriber-email-3f9c1e7a"
_MANAGE_MARK = "https://manage-url-3f9c1e7a.invalid"
_UNSUBSCRIBE_MARK = "https://unsubscribe-url-3f9c1e7a.invalid"


@dataclass(frozen=True)
class SubscriberTemplate:
    """An email rendered once for many subscribers; `spec_for` fills in one of them.

    A fan-out to a million subscribers would otherwise render three templates a million
    times. What differs per subscriber is only the address in the footer and the two
    signed links (and the language and zone: one render per pair, the caller keys them by
    both); the result is the same bytes as `render_email` per subscriber (tested).
    """

    rendered: RenderedEmail
    language: str = "en"
    zone: str = ""

    @classmethod
    def render(
        cls, name: str, context: dict[str, Any], *, language: str = "en", zone: str = ""
    ) -> SubscriberTemplate:
        stand_in = Subscriber(email=_EMAIL_MARK, language=language, time_zone=zone)
        return cls(
            render_email(
                name,
                {
                    **context,
                    "subscriber": stand_in,
                    "manage_url": _MANAGE_MARK,
                    "unsubscribe_url": _UNSUBSCRIBE_MARK,
                    "confirm_url": "",
                },
                language=language,
                zone=stand_in.zone,
            ),
            language=language,
            zone=stand_in.zone,
        )

    def spec_for(
        self, *, subscriber: Subscriber, key: str, thread: dict[str, str] | None = None
    ) -> EmailSpec:
        """The email for `subscriber`; `thread`: its threading headers (`thread_headers`)."""
        if (subscriber.language, subscriber.zone) != (self.language, self.zone):
            raise ValueError(
                f"a {self.language!r} {self.zone} email for a {subscriber.language!r} {subscriber.zone} subscriber"
            )
        with translation.override(subscriber.language):  # its links open pages in its language
            manage = absolute_url(
                reverse("subscriptions:manage", args=[make_token(subscriber, Purpose.MANAGE)])
            )
            unsubscribe = absolute_url(
                reverse("subscriptions:unsubscribe", args=[make_token(subscriber, Purpose.UNSUBSCRIBE)])
            )

        def fill(text: str, address: str) -> str:
            return (
                text.replace(_EMAIL_MARK, address)
                .replace(_MANAGE_MARK, manage)
                .replace(_UNSUBSCRIBE_MARK, unsubscribe)
            )

        return EmailSpec(
            key=key,
            to=[subscriber.email],
            subject=fill(self.rendered.subject, subscriber.email),
            text=fill(self.rendered.text, subscriber.email),
            html=fill(self.rendered.html, str(escape(subscriber.email))),
            headers={**subscriber_headers(unsubscribe), **(thread or {})},
            purpose=SUBSCRIBER_PURPOSE,
            ref=subscriber.outbox_ref,
        )


def send_to_subscriber(*, subscriber: Subscriber, key: str, template: str, context: dict[str, Any]) -> Any:
    links = subscriber_links(subscriber)
    rendered = render_email(
        template,
        {**context, **links, "subscriber": subscriber},
        language=subscriber.language,
        zone=subscriber.zone,
    )
    return email_enqueue(
        key=key,
        to=[subscriber.email],
        subject=rendered.subject,
        text=rendered.text,
        html=rendered.html,
        headers=subscriber_headers(links["unsubscribe_url"]),
        purpose=SUBSCRIBER_PURPOSE,
        ref=subscriber.outbox_ref,
    )


def send_confirmation(*, subscriber: Subscriber, key: str) -> Any:
    return send_to_subscriber(
        subscriber=subscriber,
        key=key,
        template="subscription_confirm",
        context={"confirm_days": settings.SUBSCRIPTION_CONFIRM_MAX_AGE // 86400},
    )


def send_already_subscribed(*, subscriber: Subscriber, key: str) -> Any:
    return send_to_subscriber(subscriber=subscriber, key=key, template="subscription_known", context={})


def send_webhook_disabled(*, subscriber: Subscriber) -> Any:
    stamp = subscriber.disabled_at.isoformat() if subscriber.disabled_at else ""
    return send_to_subscriber(
        subscriber=subscriber,
        key=f"subscription-webhook-disabled:{subscriber.pk}:{stamp}",
        template="subscription_webhook_disabled",
        context={"failures": subscriber.failure_count, "reason": subscriber.disabled_reason},
    )


def _admin_incident_url(incident_id: int) -> str:
    try:
        return absolute_url(reverse("admin:incidents_incident_change", args=[incident_id]))
    except NoReverseMatch:  # the incident admin is not registered in this deployment
        return ""


def send_action_item_reminder(*, item: Any, today: date, overdue: bool) -> Any:
    rendered = render_email(
        "action_item_reminder",
        {
            "item": item,
            "incident": item.incident,
            "overdue": overdue,
            "days_left": (item.due_date - today).days if item.due_date else None,
            "staff_url": absolute_url(reverse("subscriptions_extra:staff_action_items")),
            "admin_url": _admin_incident_url(item.incident_id),
            "incident_url": absolute_url(f"/incidents/{item.incident.public_id}/"),
        },
    )
    return email_enqueue(
        # Once per item per day: the beat may fire twice, the key makes it one email.
        key=f"action-item-reminder:{item.pk}:{today.isoformat()}",
        to=[item.owner.email],
        subject=rendered.subject,
        text=rendered.text,
        html=rendered.html,
        headers={"Auto-Submitted": "auto-generated"},
        purpose=ACTION_ITEM_PURPOSE,
        ref=f"action-item:{item.pk}",
    )
