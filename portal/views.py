"""The customer portal's pages: sign in by a one-time link, the portal, statements.
Thin: reads in portal.selectors, writes in portal.services."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from core.timezones import display_zone_active
from credits import exports, sla
from credits.models import NoticeState
from edge import ratelimit
from portal import selectors, services
from portal.forms import SignInForm

CUSTOMER_KEY = "portal_customer_id"
EMAIL_KEY = "portal_contact_email"

View = Callable[..., HttpResponse]


def private(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "private, no-store"
    return response


def _safe_next(request: HttpRequest, value: str) -> str:
    if value and url_has_allowed_host_and_scheme(value, allowed_hosts={request.get_host()}):
        return value
    return reverse("portal:home")


def contact_required(view: View) -> View:
    """A signed-in contact of a customer (else the sign-in page, coming back here)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        customer = selectors.signed_in_customer(
            request.session.get(CUSTOMER_KEY), request.session.get(EMAIL_KEY)
        )
        if customer is None:
            login = reverse("portal:login")
            return private(HttpResponseRedirect(f"{login}?next={request.get_full_path()}"))
        return private(view(request, customer, *args, **kwargs))

    return wrapper


def _limited(request: HttpRequest, email: str) -> bool:
    window = int(settings.PORTAL_LINK_RATE_WINDOW)
    by_ip = ratelimit.hit(
        scope="portal-link-ip",
        value=ratelimit.client_address(request),
        limit=int(settings.PORTAL_LINK_RATE_PER_IP),
        window=window,
    )
    if not by_ip.allowed:
        return True
    by_email = ratelimit.hit(
        scope="portal-link-email",
        value=selectors.normalized(email),
        limit=int(settings.PORTAL_LINK_RATE_PER_EMAIL),
        window=window,
    )
    return not by_email.allowed


@require_http_methods(["GET", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = SignInForm(request.POST)
        if form.is_valid():
            email = form.cleaned_data["email"]
            if _limited(request, email):
                form.add_error(None, _("Too many sign-in requests. Wait a while and try again."))
                return private(render(request, "portal/login.html", {"form": form}, status=429))
            next_url = _safe_next(request, form.cleaned_data["next"])
            provider = selectors.oidc_provider_for_email(email)
            if provider is not None:
                # The customer signs in at its own provider: no email link for its domain.
                # A link to follow, not a redirect: the page's CSP (form-action 'self')
                # stops a form's redirect to another origin.
                start = reverse("portal_oidc:start", args=[provider.pk])
                context = {"start": f"{start}?{urlencode({'next': next_url})}", "customer": provider.customer}
                return private(render(request, "portal/login_oidc.html", context))
            services.signin_link_request(email=email, next_url=next_url)
            # The same answer whether or not the address may sign in.
            context = {"email": email, "minutes": int(settings.PORTAL_LINK_MAX_AGE) // 60}
            return private(render(request, "portal/login_sent.html", context))
    else:
        form = SignInForm(initial={"next": request.GET.get("next", "")})
    context = {"form": form, "failed": request.GET.get("failed") == "oidc"}
    return private(render(request, "portal/login.html", context))


@require_http_methods(["GET", "POST"])
def redeem(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows a button, POST signs in: a mail scanner that opens links does not use
    them up."""
    try:
        if request.method == "POST":
            signin = services.signin_link_redeem(token)
        else:
            signin = services.signin_link_peek(token)
            return private(render(request, "portal/redeem.html", {"email": signin.email}))
    except services.BadLink:
        return private(render(request, "portal/bad_link.html", status=400))
    request.session.cycle_key()
    request.session[CUSTOMER_KEY] = signin.customer_id
    request.session[EMAIL_KEY] = signin.email
    return private(HttpResponseRedirect(_safe_next(request, signin.next_url)))


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    request.session.pop(CUSTOMER_KEY, None)
    request.session.pop(EMAIL_KEY, None)
    request.session.cycle_key()
    return private(HttpResponseRedirect(reverse("portal:login")))


@contact_required
def index(request: HttpRequest, customer: Any) -> HttpResponse:
    overview = selectors.overview(customer, now=timezone.now())
    context = {
        "overview": overview,
        "email": request.session.get(EMAIL_KEY, ""),
        "pages": list(selectors.pages_of(customer)),
    }
    with display_zone_active():  # times in the zone the footer names, as on every page
        return render(request, "portal/index.html", context)


@contact_required
def statement(request: HttpRequest, customer: Any, period: str) -> HttpResponse:
    try:
        month = sla.Period.parse(period)
    except ValueError:
        raise Http404 from None
    st = exports.statement(customer, month)
    # The customer reads the credits it was sent, not those still under review.
    st = dataclasses.replace(st, notices=[n for n in st.notices if n.state == NoticeState.SENT])
    if request.GET.get("output") == "csv":
        response = HttpResponse(exports.statement_csv(st), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="sla-statement-{period}.csv"'
        return response
    return render(request, "portal/statement.html", {"st": st, "period": month})
