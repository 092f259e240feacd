"""A signed-in reader subscribes to one audience or internal page; the one-click
unsubscribe link of its emails. Thin: the page gate, one service, render.

The page is looked up through the audience pages' one gate after the session is read,
so an anonymous visitor gets the same 404 for a private page's subscribe address as for
a page that does not exist (docs/adr/0034-page-subscribers.md).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import get_language
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from audiences.selectors import page_get_for_reader
from core.i18n import supported_language
from portal import page_subscriptions, selectors
from portal.forms import PageWebhookForm
from portal.models import PageSubscriber
from portal.views import CUSTOMER_KEY, EMAIL_KEY, private


def _add_errors(form: PageWebhookForm, exc: ValidationError) -> None:
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"url": exc.messages}
    for field, messages in errors.items():
        form.add_error(field if field in form.fields else None, messages)


@require_http_methods(["GET", "POST"])
def page_subscribe(request: HttpRequest, slug: str) -> HttpResponse:
    user: Any = request.user  # read before the page: the same Vary whether or not it exists
    email = request.session.get(EMAIL_KEY)
    customer = selectors.signed_in_customer(request.session.get(CUSTOMER_KEY), email)
    page = page_get_for_reader(slug=slug, user=user, customer_id=customer.pk if customer else None)
    reader = page_subscriptions.reader_for_page(page, customer=customer, email=str(email or ""), user=user)
    if reader is None:  # a public page, nobody signed in
        login = reverse("portal:login")
        return private(HttpResponseRedirect(f"{login}?next={request.get_full_path()}"))
    form = PageWebhookForm()
    here = reverse("portal:page-subscribe", args=[page.slug])
    if request.method == "POST":
        action = request.POST.get("action", "")
        language = supported_language(get_language())
        if action == "email":
            page_subscriptions.page_subscribe_email(page=page, reader=reader, language=language)
            return private(HttpResponseRedirect(f"{here}?saved=subscribed"))
        if action == "remove":
            chosen = request.POST.get("subscriber", "")
            mine = {str(s.pk): s for s in page_subscriptions.subscriptions_of(page, reader)}
            target = mine.get(chosen)
            if target is None:
                raise Http404("No such subscription.")
            page_subscriptions.page_unsubscribe(subscriber=target)
            return private(HttpResponseRedirect(f"{here}?saved=removed"))
        if action != "webhook":
            return private(HttpResponse("Unknown action.", status=400, content_type="text/plain"))
        form = PageWebhookForm(request.POST)
        if form.is_valid():
            try:
                page_subscriptions.page_subscribe_webhook(
                    page=page, reader=reader, url=form.cleaned_data["url"], language=language
                )
            except ValidationError as exc:
                _add_errors(form, exc)
            else:
                return private(HttpResponseRedirect(f"{here}?saved=webhook"))
    subscriptions = page_subscriptions.subscriptions_of(page, reader)
    context = {
        "page": page,
        "reader": reader,
        "form": form,
        "products": list(page.products.order_by("position", "name")),
        "locations": list(page.locations.order_by("name")),
        "email_subscription": next((s for s in subscriptions if s.kind == PageSubscriber.Kind.EMAIL), None),
        "webhooks": [s for s in subscriptions if s.is_hook],
        "saved": request.GET.get("saved", ""),
    }
    return private(render(request, "portal/page_subscribe.html", context, status=400 if form.errors else 200))


# RFC 8058 one-click: the mail client POSTs without cookies or a CSRF token; the signed
# token in the URL is the authority.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def page_unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    try:
        subscriber = page_subscriptions.subscriber_for_token(token)
    except page_subscriptions.BadToken:
        return private(render(request, "portal/page_unsubscribe.html", {"bad": True}, status=400))
    if request.method == "POST":
        page_subscriptions.page_unsubscribe(subscriber=subscriber)
        return private(render(request, "portal/page_unsubscribe.html", {"done": True}))
    # GET never unsubscribes (link scanners follow GETs).
    context = {"subscriber": subscriber, "token": token}
    return private(render(request, "portal/page_unsubscribe.html", context))
