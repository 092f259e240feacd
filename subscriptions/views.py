"""Public subscription pages, the maintenance calendar and the staff action-item list.

Thin: parse, call one service or selector, render. The subscribe form answers the same
way for every address (no enumeration); signed links are checked by the selector.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import ValidationError
from django.core.validators import slug_re
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_safe

from core.i18n import supported_language
from edge import ratelimit
from incidents import selectors as incident_selectors
from subscriptions import ical, selectors, services
from subscriptions.action_items import today_local
from subscriptions.forms import ManageForm, SubscribeForm, error_links
from subscriptions.models import Subscriber
from subscriptions.notifications import incident_url
from subscriptions.tokens import Purpose, TokenExpired, TokenInvalid, make_token


def _form_errors_from(form: Any, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def _bad_link(request: HttpRequest, *, expired: bool) -> HttpResponse:
    return render(
        request,
        "subscriptions/bad_link.html",
        {"expired": expired},
        status=410 if expired else 400,
    )


def _subscriber_or_error(
    request: HttpRequest, token: str, purpose: Purpose
) -> tuple[Subscriber | None, HttpResponse | None]:
    try:
        return selectors.subscriber_from_token(token=token, purpose=purpose), None
    except TokenExpired:
        return None, _bad_link(request, expired=True)
    except TokenInvalid:
        return None, _bad_link(request, expired=False)


def _channel(value: str | None) -> str:
    """The channel a subscribe page shows: `?channel=` (or the POST's kind), else email."""
    return value if value in Subscriber.Kind.values else Subscriber.Kind.EMAIL


# The channel switch's words: short, the products' own names.
_CHANNEL_LABELS = {
    Subscriber.Kind.EMAIL: _("Email"),
    Subscriber.Kind.WEBHOOK: _("Webhook"),
    Subscriber.Kind.SLACK: "Slack",
    Subscriber.Kind.TEAMS: "Microsoft Teams",
}


def _subscribe_page(
    request: HttpRequest, form: SubscribeForm, *, status: int = 200, **extra: Any
) -> HttpResponse:
    base = reverse("subscriptions:subscribe")
    channels = [
        {"label": label, "href": f"{base}?channel={value}", "current": value == form.channel}
        for value, label in _CHANNEL_LABELS.items()
    ]
    return render(
        request,
        "subscriptions/subscribe.html",
        {"form": form, "channels": channels, "errors": error_links(form), **extra},
        status=status,
    )


def _blank_form(channel: str, preselected: dict[str, Any]) -> SubscribeForm:
    initial = {"kind": channel, "time_zone": settings.DISPLAY_TIME_ZONE, **preselected}
    return SubscribeForm(channel=channel, initial=initial)


def _preselected(request: HttpRequest) -> dict[str, Any]:
    # `?product=<slug>` (repeatable), from a product or an incident page, ticks those
    # products under "Only the products I choose"; unknown or malformed slugs are ignored.
    slugs = [s for s in request.GET.getlist("product")[:50] if len(s) <= 100 and slug_re.fullmatch(s)]
    products = list(incident_selectors.products_public().filter(slug__in=slugs)) if slugs else []
    return {"scope": "some", "products": products} if products else {}


@require_http_methods(["GET", "HEAD", "POST"])
def subscribe(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        channel = _channel(request.GET.get("channel"))
        return _subscribe_page(request, _blank_form(channel, _preselected(request)))
    verdict = ratelimit.hit(
        scope="subscribe-ip",
        value=ratelimit.client_address(request),
        limit=settings.SUBSCRIBE_RATE_PER_IP,
        window=settings.SUBSCRIBE_RATE_WINDOW,
    )
    if not verdict.allowed:
        response = _subscribe_page(
            request, _blank_form(_channel(request.POST.get("kind")), {}), status=429, throttled=True
        )
        response["Retry-After"] = str(verdict.retry_after)
        return response
    form = SubscribeForm(request.POST, channel=_channel(request.POST.get("kind")))
    if form.is_valid():
        email = form.cleaned_data["email"]
        per_address = ratelimit.hit(
            scope="subscribe-address",
            # The mailbox, not the spelling: plus-tags and case reach the same inbox.
            value=services.mailbox_key(email),
            limit=settings.SUBSCRIBE_RATE_PER_ADDRESS,
            window=settings.SUBSCRIBE_RATE_WINDOW,
        )
        try:
            # Over the per-address limit nothing is sent, but the answer is the same:
            # the form must neither mail-bomb an address nor tell who is subscribed.
            if per_address.allowed:
                services.subscriber_request(
                    email=email,
                    kind=form.cleaned_data["kind"],
                    url=form.cleaned_data.get("url") or "",
                    all_products=form.all_products,
                    products=form.cleaned_data.get("products") or [],
                    payload_format=form.cleaned_data.get("payload_format") or Subscriber.Format.NATIVE,
                    # The page's language (its URL prefix or the visitor's choice) is
                    # the language of the emails.
                    language=supported_language(translation.get_language()),
                    time_zone=form.cleaned_data.get("time_zone") or "",
                )
        except ValidationError as exc:
            _form_errors_from(form, exc)
        else:
            return redirect("subscriptions:subscribe_sent")
    return _subscribe_page(request, form, status=400)


@require_safe
def subscribe_sent(request: HttpRequest) -> HttpResponse:
    return render(request, "subscriptions/subscribe_sent.html")


@require_http_methods(["GET", "HEAD", "POST"])
def confirm(request: HttpRequest, token: str) -> HttpResponse:
    subscriber, error = _subscriber_or_error(request, token, Purpose.CONFIRM)
    if error is not None:
        return error
    if subscriber is None:
        return _bad_link(request, expired=False)
    if request.method == "POST":
        subscriber = services.subscriber_confirm(subscriber=subscriber)
        return redirect(
            reverse("subscriptions:manage", args=[make_token(subscriber, Purpose.MANAGE)]) + "?confirmed=1"
        )
    # GET only shows a button: mail scanners fetch links, people press buttons.
    return render(request, "subscriptions/confirm.html", {"subscriber": subscriber})


@require_http_methods(["GET", "HEAD", "POST"])
def manage(request: HttpRequest, token: str) -> HttpResponse:
    subscriber, error = _subscriber_or_error(request, token, Purpose.MANAGE)
    if error is not None:
        return error
    if subscriber is None:
        return _bad_link(request, expired=False)
    unsubscribe_url = reverse("subscriptions:unsubscribe", args=[make_token(subscriber, Purpose.UNSUBSCRIBE)])
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "save")
        if action == "reenable" and subscriber.is_hook:
            services.subscriber_reenable(subscriber=subscriber)
            return redirect(request.path + "?saved=1")
        if action == "rotate" and subscriber.kind == Subscriber.Kind.WEBHOOK:
            services.subscriber_rotate_secret(subscriber=subscriber)
            return redirect(request.path + "?saved=1")
        form = ManageForm(request.POST, kind=subscriber.kind)
        if form.is_valid():
            try:
                services.subscriber_update_products(
                    subscriber=subscriber,
                    all_products=form.all_products,
                    products=form.cleaned_data.get("products") or [],
                    language=form.cleaned_data.get("language") or None,
                    time_zone=form.cleaned_data.get("time_zone") or None,
                )
            except ValidationError as exc:
                _form_errors_from(form, exc)
            else:
                return redirect(request.path + "?saved=1")
        status = 400
    else:
        form = ManageForm(
            initial={
                "scope": "all" if subscriber.all_products else "some",
                "products": list(subscriber.products.all()),
                "language": subscriber.language,
                "time_zone": subscriber.zone,
            },
            kind=subscriber.kind,
        )
    return render(
        request,
        "subscriptions/manage.html",
        {
            "subscriber": subscriber,
            "form": form,
            "errors": error_links(form),
            "unsubscribe_url": unsubscribe_url,
            "saved": request.GET.get("saved") == "1",
            "confirmed": request.GET.get("confirmed") == "1",
        },
        status=status,
    )


# RFC 8058 one-click: the mail client POSTs without cookies or a CSRF token. The signed
# token in the URL is the authority, so CSRF protection would add nothing here.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    subscriber, error = _subscriber_or_error(request, token, Purpose.UNSUBSCRIBE)
    if error is not None:
        return error
    if request.method == "POST":
        # Also when the subscriber is already gone: a replayed link changes nothing and
        # says the same thing.
        services.subscriber_unsubscribe(subscriber=subscriber)
        return render(request, "subscriptions/unsubscribed.html")
    # GET never unsubscribes (link prefetchers and scanners follow GETs).
    return render(request, "subscriptions/unsubscribe.html", {"subscriber": subscriber, "token": token})


@require_safe
def maintenance_ics(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    events = []
    for incident in incident_selectors.maintenance_upcoming_public(now=now):
        assert incident.scheduled_for is not None and incident.scheduled_until is not None
        products = sorted(
            {w.product for w in incident.windows.all() if w.product.is_public},
            key=lambda p: (p.position, p.name),
        )
        locations = sorted({w.location.label for w in incident.windows.all() if w.location is not None})
        names = ", ".join(p.name for p in products)
        description = incident.summary or incident.title
        if names:
            description = f"Affected: {names}\n\n{description}"
        events.append(
            ical.CalendarEvent(
                uid=f"maintenance-{incident.public_id}@{settings.SITE_URL.split('://', 1)[-1]}",
                start=incident.scheduled_for,
                end=incident.scheduled_until,
                summary=f"{settings.SITE_NAME} maintenance: {incident.title}",
                description=f"{description}\n\n{incident_url(incident)}",
                url=incident_url(incident),
                stamp=incident.updated_at,
                # Calendars take the highest SEQUENCE as the current version of an event.
                sequence=int(incident.updated_at.timestamp()) - int(incident.created_at.timestamp()),
                location=", ".join(locations),
            )
        )
    body = ical.build_calendar(
        name=f"{settings.SITE_NAME} scheduled maintenance",
        prodid=f"-//{settings.SITE_NAME}//Status page//EN",
        events=events,
    )
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="maintenance.ics"'
    response["Cache-Control"] = "public, max-age=300"
    return response


@staff_member_required
@require_safe
def staff_action_items(request: HttpRequest) -> HttpResponse:
    today = today_local()
    items = list(incident_selectors.action_items_open())
    overdue = [i for i in items if i.due_date is not None and i.due_date < today]
    soon_limit = settings.ACTION_ITEM_REMINDER_DAYS
    due_soon = [i for i in items if i.due_date is not None and 0 <= (i.due_date - today).days <= soon_limit]
    later = [i for i in items if i not in overdue and i not in due_soon]
    return render(
        request,
        "subscriptions/staff_action_items.html",
        {
            "today": today,
            "overdue": overdue,
            "due_soon": due_soon,
            "later": later,
            "total": len(items),
            "soon_days": soon_limit,
        },
    )
