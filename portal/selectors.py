"""Reads of the customer portal: who may sign in for which customer, and what a
signed-in contact sees (figures from the credits room's own code)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal

from django.db.models import Q, QuerySet

from audiences.models import Page
from core.i18n import month_label, percent
from credits import selectors as credit_selectors
from credits import sla
from credits.models import CreditNotice, Customer, CustomerEntitlement
from incidents.models import Incident
from incidents.selectors import PRODUCT_STATUS_LABELS
from portal.models import OidcProvider, PortalAccess

# How far back the portal lists incidents and maintenance.
HISTORY_DAYS = 183


def normalized(email: str) -> str:
    return (email or "").strip().lower()


def customer_for_email(email: str) -> Customer | None:
    """The customer `email` may sign in for: a named contact first, else its domain."""
    email = normalized(email)
    if "@" not in email:
        return None
    domain = email.rsplit("@", 1)[1]
    access = (
        PortalAccess.objects.filter(Q(email__iexact=email) | Q(domain__iexact=domain))
        .select_related("customer")
        .order_by("domain")  # a named contact ("" domain) before a domain rule
        .first()
    )
    if access is not None:
        return access.customer
    provider = oidc_provider_for_email(email)
    return provider.customer if provider is not None else None


def oidc_provider_for_email(email: str) -> OidcProvider | None:
    """The customer's own OpenID Connect provider for the address's domain, if any."""
    email = normalized(email)
    if "@" not in email:
        return None
    domain = email.rsplit("@", 1)[1]
    return OidcProvider.objects.filter(domain__iexact=domain).select_related("customer").first()


def signed_in_customer(customer_id: object, email: object) -> Customer | None:
    """The customer a portal session is for, while that address may still sign in for it
    (access removed in the console ends the sessions it opened)."""
    if not isinstance(customer_id, int) or not isinstance(email, str):
        return None
    customer = customer_for_email(email)
    return customer if customer is not None and customer.pk == customer_id else None


def access_rows() -> QuerySet[PortalAccess]:
    return PortalAccess.objects.select_related("customer").order_by("customer__name", "domain", "email")


@dataclass(frozen=True)
class Entitled:
    entitlement: CustomerEntitlement
    status: str

    @property
    def status_label(self) -> str:
        return str(PRODUCT_STATUS_LABELS.get(self.status, self.status))


@dataclass(frozen=True)
class Touching:
    incident: Incident
    affected: timedelta
    start: datetime
    end: datetime | None


@dataclass(frozen=True)
class Uptime:
    period: sla.Period
    policy_name: str
    target: Decimal
    result: sla.SlaResult

    @property
    def met(self) -> bool:
        return self.result.uptime_percent >= self.target

    @property
    def uptime_label(self) -> str:
        # As the credit letter writes it: the stored (truncated) figure, to 0.01, down.
        shown = self.result.uptime_percent_rounded.quantize(Decimal("0.01"), rounding=ROUND_DOWN)
        return percent(shown)

    @property
    def target_label(self) -> str:
        return percent(self.target.normalize())

    @property
    def month(self) -> str:
        return month_label(datetime(self.period.year, self.period.month, 1))


@dataclass(frozen=True)
class Overview:
    customer: Customer
    entitled: list[Entitled]
    incidents: list[Touching]
    uptime: list[Uptime]
    notices: list[CreditNotice]


def current_periods(now: datetime) -> tuple[sla.Period, sla.Period]:
    """This month and the last, as the monthly credit run names them (UTC)."""
    this = sla.Period.containing(now.astimezone(UTC).date())
    return this, this.previous()


def uptime_for(customer: Customer, period: sla.Period, *, now: datetime) -> list[Uptime]:
    return [
        Uptime(period=period, policy_name=m.policy.name, target=m.policy.target, result=m.result)
        for m in credit_selectors.customer_measures(customer, period, now=now)
    ]


def overview(customer: Customer, *, now: datetime) -> Overview:
    statuses = credit_selectors.customer_statuses(customer, now=now)
    spans = credit_selectors.customer_incidents(customer, since=now - timedelta(days=HISTORY_DAYS), now=now)
    incidents = Incident.objects.filter(pk__in=[s.incident_id for s in spans], is_public=True).in_bulk()
    this, last = current_periods(now)
    return Overview(
        customer=customer,
        entitled=[Entitled(e, status) for e, status in statuses],
        incidents=[
            Touching(incidents[s.incident_id], s.affected, s.start, s.end)
            for s in spans
            if s.incident_id in incidents
        ],
        uptime=uptime_for(customer, this, now=now) + uptime_for(customer, last, now=now),
        notices=list(credit_selectors.customer_notices(customer)),
    )


def pages_of(customer: Customer) -> QuerySet[Page]:
    """The audience pages a customer's contacts read (and may subscribe to)."""
    return Page.objects.filter(visibility=Page.Visibility.AUDIENCE, customers=customer).order_by(
        "title", "id"
    )


def oidc_providers() -> QuerySet[OidcProvider]:
    return OidcProvider.objects.select_related("customer").order_by("customer__name", "domain")
