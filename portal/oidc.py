"""OpenID Connect sign-in for customer contacts through mozilla-django-oidc, one
provider per customer domain (docs/adr/0029-customer-portal.md).

The library reads its configuration with `get_settings`; here that reads the
`OidcProvider` row the sign-in started with (its id kept in the session), so each
customer's provider has its own endpoints and client. The backend signs nobody in as
a Django user: a verified email claim of the provider's domain, still allowed for its
customer, becomes a portal session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from portal import selectors
from portal.models import OidcProvider

PROVIDER_KEY = "portal_oidc_provider"
CUSTOMER_KEY = "portal_customer_id"
EMAIL_KEY = "portal_contact_email"


def provider_settings(provider: OidcProvider) -> dict[str, Any]:
    return {
        "OIDC_OP_AUTHORIZATION_ENDPOINT": provider.authorization_endpoint,
        "OIDC_OP_TOKEN_ENDPOINT": provider.token_endpoint,
        "OIDC_OP_USER_ENDPOINT": provider.userinfo_endpoint,
        "OIDC_OP_JWKS_ENDPOINT": provider.jwks_uri,
        "OIDC_RP_CLIENT_ID": provider.client_id,
        "OIDC_RP_CLIENT_SECRET": provider.client_secret,
        "OIDC_RP_SIGN_ALGO": provider.sign_algo,
        "OIDC_RP_SCOPES": "openid email",
        "OIDC_USE_PKCE": True,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "portal_oidc:callback",
        "OIDC_CREATE_USER": False,
    }


class _Configured:
    """`get_settings` from one provider's row, the project's settings for the rest."""

    conf: dict[str, Any]

    def get_settings(self, attr: str, *args: Any) -> Any:
        if attr in self.conf:
            return self.conf[attr]
        return import_from_settings(attr, *args)


@dataclass
class Contact:
    """What the backend returns in place of a user: a contact allowed for a customer."""

    customer_id: int
    email: str
    is_active: bool = True
    backend: str = ""


class PortalOidcBackend(_Configured, OIDCAuthenticationBackend):  # type: ignore[misc]
    """In AUTHENTICATION_BACKENDS for the library's callback view; answers only a
    callback whose session names a portal provider (never a staff login)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.conf = {}
        self.provider: OidcProvider | None = None

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or not hasattr(request, "session"):
            return None
        provider_id = request.session.get(PROVIDER_KEY)
        if not isinstance(provider_id, int):
            return None
        provider = OidcProvider.objects.filter(pk=provider_id).first()
        if provider is None:
            return None
        self.provider = provider
        self.conf = provider_settings(provider)
        OIDCAuthenticationBackend.__init__(self)
        return super().authenticate(request, **kwargs)

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Contact | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        email = selectors.normalized(str(claims.get("email") or ""))
        if not email or claims.get("email_verified") is False or self.provider is None:
            return None
        if not email.endswith("@" + self.provider.domain.lower()):
            return None  # a provider speaks for its own domain only
        return Contact(customer_id=self.provider.customer_id, email=email)

    def get_user(self, user_id: Any) -> None:
        return None


class Start(_Configured, OIDCAuthenticationRequestView):  # type: ignore[misc]
    """Send the contact to its customer's provider."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)
        self.conf = {}

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:  # type: ignore[override]
        provider = get_object_or_404(OidcProvider, pk=pk)
        self.conf = provider_settings(provider)
        self.OIDC_OP_AUTH_ENDPOINT = provider.authorization_endpoint
        self.OIDC_RP_CLIENT_ID = provider.client_id
        request.session[PROVIDER_KEY] = provider.pk
        response: HttpResponse = super().get(request)
        response["Cache-Control"] = "private, no-store"
        return response


class Callback(_Configured, OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """The library's callback (state, nonce and PKCE checks, token exchange); a success
    opens a portal session instead of a Django login."""

    def get(self, request: HttpRequest) -> HttpResponse:  # type: ignore[override]
        self.conf = {
            "LOGIN_REDIRECT_URL": "portal:home",
            "LOGIN_REDIRECT_URL_FAILURE": reverse("portal:login") + "?failed=oidc",
        }
        response: HttpResponse = super().get(request)
        response["Cache-Control"] = "private, no-store"
        return response

    def login_success(self) -> HttpResponse:
        contact = self.user
        customer = selectors.customer_for_email(contact.email)
        if customer is None or customer.pk != contact.customer_id:
            return self.login_failure()
        session = self.request.session
        session.cycle_key()
        session[CUSTOMER_KEY] = contact.customer_id
        session[EMAIL_KEY] = contact.email
        session["oidc_id_token_expiration"] = time.time() + 15 * 60
        return HttpResponseRedirect(self.success_url)
