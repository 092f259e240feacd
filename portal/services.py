"""Writes of the customer portal: who may sign in (staff, `portal.access`), and the
one-time sign-in links (docs/adr/0029-customer-portal.md).

A link's token is signed by Django (`django.core.signing`, salted, timestamped: expiry
and tampering are its checks); its one-time part is kept hashed on a `SignInLink` row,
which a redemption marks used in one conditional UPDATE, so a link works once even
when two clicks race.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import requests
from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from core import roles
from credits.models import Customer
from outbox.services import email_enqueue
from portal import selectors
from portal.models import OidcProvider, PortalAccess, SignInLink

SALT = "portal.signin"
PURPOSE = "portal.signin"


class BadLink(Exception):
    """The link is unknown, altered, expired or used: the page says so, nothing else."""


@dataclass(frozen=True)
class SignIn:
    customer_id: int
    email: str
    next_url: str


def _hash(nonce: str) -> str:
    return hashlib.sha256(nonce.encode()).hexdigest()


def access_add(*, actor: Any, customer: Customer, domain: str = "", email: str = "") -> PortalAccess:
    roles.check(actor, "portal.access")
    domain = domain.strip().lower().lstrip("@")
    email = selectors.normalized(email)
    if bool(domain) == bool(email):
        raise ValidationError("Give an email domain or one address, not both.")
    if email:
        validate_email(email)
    elif "." not in domain or "@" in domain or " " in domain:
        raise ValidationError(f"{domain!r} is not an email domain.")
    try:
        with transaction.atomic():
            return PortalAccess.objects.create(customer=customer, domain=domain, email=email)
    except IntegrityError:
        raise ValidationError(f"{domain or email} already signs in for a customer.") from None


def access_remove(*, actor: Any, access: PortalAccess) -> None:
    roles.check(actor, "portal.access")
    access.delete()


def signin_link_request(*, email: str, next_url: str = "", now: datetime | None = None) -> bool:
    """Send a sign-in link to `email` if it may sign in; True when one was queued. The
    caller answers the same either way (no account enumeration)."""
    email = selectors.normalized(email)
    customer = selectors.customer_for_email(email)
    if customer is None:
        return False
    now = now or timezone.now()
    nonce = secrets.token_urlsafe(24)
    with transaction.atomic():
        # Links a day past their expiry have nothing left to prove: the table stays small.
        SignInLink.objects.filter(expires_at__lt=now - timedelta(days=1)).delete()
        link = SignInLink.objects.create(
            customer=customer,
            email=email,
            nonce_hash=_hash(nonce),
            created_at=now,
            expires_at=now + timedelta(seconds=int(settings.PORTAL_LINK_MAX_AGE)),
        )
        token = signing.dumps({"i": link.pk, "n": nonce, "x": next_url}, salt=SALT, compress=True)
        url = settings.SITE_URL + reverse("portal:redeem", args=[token])
        context = {
            "url": url,
            "customer": customer,
            "minutes": int(settings.PORTAL_LINK_MAX_AGE) // 60,
            "site_name": settings.SITE_NAME,
        }
        email_enqueue(
            key=f"portal-signin:{link.pk}",
            to=[email],
            subject=" ".join(render_to_string("emails/portal_signin_subject.txt", context).split()),
            text=render_to_string("emails/portal_signin.txt", context),
            purpose=PURPOSE,
        )
    return True


def signin_link_peek(token: str) -> SignIn:
    """What a link would sign in as, without using it (the confirmation page)."""
    link, payload = _link(token)
    if link.used_at is not None or link.expires_at <= timezone.now():
        raise BadLink
    return SignIn(link.customer_id, link.email, str(payload.get("x") or ""))


def signin_link_redeem(token: str, *, now: datetime | None = None) -> SignIn:
    """Use the link: once, before it expires, while its address may still sign in."""
    now = now or timezone.now()
    link, payload = _link(token)
    used = SignInLink.objects.filter(
        pk=link.pk, nonce_hash=link.nonce_hash, used_at__isnull=True, expires_at__gt=now
    ).update(used_at=now)
    customer = selectors.customer_for_email(link.email)
    if used != 1 or customer is None or customer.pk != link.customer_id:
        raise BadLink
    return SignIn(link.customer_id, link.email, str(payload.get("x") or ""))


def _link(token: str) -> tuple[SignInLink, dict[str, Any]]:
    try:
        payload = signing.loads(token, salt=SALT, max_age=int(settings.PORTAL_LINK_MAX_AGE))
    except signing.BadSignature:  # altered, or older than the link lifetime
        raise BadLink from None
    if not isinstance(payload, dict) or not isinstance(payload.get("i"), int):
        raise BadLink
    link = SignInLink.objects.filter(pk=payload["i"]).first()
    if link is None or not secrets.compare_digest(link.nonce_hash, _hash(str(payload.get("n")))):
        raise BadLink
    return link, payload


def oidc_provider_add(
    *, actor: Any, customer: Customer, domain: str, issuer: str, client_id: str, client_secret: str
) -> OidcProvider:
    """Let the contacts @`domain` sign in at `issuer`; its endpoints are read from the
    issuer's discovery document now (refused when it cannot be read or names another
    issuer)."""
    roles.check(actor, "portal.access")
    domain = domain.strip().lower().lstrip("@")
    issuer = issuer.strip().rstrip("/")
    try:
        answer = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=5)
        answer.raise_for_status()
        document = answer.json()
    except (requests.RequestException, ValueError) as exc:
        raise ValidationError(f"Could not read the discovery document of {issuer}: {exc}") from None
    if not isinstance(document, dict) or str(document.get("issuer", "")).rstrip("/") != issuer:
        raise ValidationError(f"{issuer} does not describe itself as that issuer.")
    fields = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")
    if not all(isinstance(document.get(f), str) for f in fields):
        raise ValidationError(f"The discovery document of {issuer} lacks an endpoint.")
    try:
        with transaction.atomic():
            return OidcProvider.objects.create(
                customer=customer,
                domain=domain,
                issuer=issuer,
                client_id=client_id,
                client_secret=client_secret,
                **{f: document[f] for f in fields},
            )
    except IntegrityError:
        raise ValidationError(f"@{domain} already signs in at a provider.") from None


def oidc_provider_remove(*, actor: Any, provider: OidcProvider) -> None:
    roles.check(actor, "portal.access")
    provider.delete()
