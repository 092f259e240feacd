"""Demo audience pages: an internal page for employees and two customer pages (Tailspin
Toys, a Cloud Storage us-central1 customer; Northwind Traders, a Gmail-only customer),
with words for each audience on the Cloud Storage incident of 2026-10-08. Idempotent:
an existing page (by slug) is left as it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from django.conf import settings

from audiences import services
from audiences.models import Page, UpdateWords
from credits.models import Customer
from demo.incidents import GCS_TITLE
from incidents.models import Incident, Location, Product


class Writer(Protocol):
    def write(self, msg: str) -> object: ...


@dataclass
class AudiencesDemoSummary:
    pages_created: int = 0


AUDIENCE_MESSAGE = (
    "Your buckets in us-central1 were among those affected. Your account team will contact "
    "you about the SLA credit for October; nothing is needed on your side."
)
INTERNAL_NOTE = (
    "Metadata shard rebalancing in us-central1 is paused until the fix is verified; "
    "escalations go to the storage on-call (internal only)."
)


def _pages() -> list[dict[str, object]]:
    products = {p.slug: p for p in Product.objects.all()}
    us_central1 = Location.objects.filter(name="us-central1").first()
    customers = {c.name: c for c in Customer.objects.filter(name__in=["Tailspin Toys", "Northwind Traders"])}
    pages: list[dict[str, object]] = [
        {
            "slug": "internal",
            "title": "Internal status (employees)",
            "intro": "Every product, staff-only ones included, with the internal notes of each update.",
            "visibility": Page.Visibility.INTERNAL,
            "products": list(products.values()),
        }
    ]
    if "cloud-storage" in products and us_central1 and "Tailspin Toys" in customers:
        pages.append(
            {
                "slug": "tailspin-toys",
                "title": "Tailspin Toys: Cloud Storage in us-central1",
                "intro": "The status of the services in Tailspin Toys' contract.",
                "visibility": Page.Visibility.AUDIENCE,
                "products": [products["cloud-storage"]],
                "locations": [us_central1],
                "customers": [customers["Tailspin Toys"]],
            }
        )
    if "gmail" in products and "Northwind Traders" in customers:
        pages.append(
            {
                "slug": "northwind-traders",
                "title": "Northwind Traders: Gmail",
                "intro": "The status of the services in Northwind Traders' contract.",
                "visibility": Page.Visibility.AUDIENCE,
                "products": [products["gmail"]],
                "customers": [customers["Northwind Traders"]],
            }
        )
    return pages


def _words() -> None:
    incident = Incident.objects.filter(title=GCS_TITLE).first()
    if incident is None:
        return
    first = incident.updates.order_by("display_at", "id").first()
    if first is None or UpdateWords.objects.filter(update=first).exists():
        return
    services.update_words_set(
        actor=None, update=first, audience_message=AUDIENCE_MESSAGE, internal_note=INTERNAL_NOTE
    )


def load(*, stdout: Writer | None = None) -> AudiencesDemoSummary:
    summary = AudiencesDemoSummary()
    existing = set(Page.objects.values_list("slug", flat=True))
    for spec in _pages():
        if spec["slug"] in existing:
            continue
        services.page_save(actor=None, **spec)  # type: ignore[arg-type]
        summary.pages_created += 1
    _words()
    if stdout is not None:
        stdout.write(f"Audience pages: {summary.pages_created} created\n")
    return summary


def sign_in_hint() -> str:
    """What `make run` prints about the demo pages."""
    if not Page.objects.exists():
        return ""
    site = settings.SITE_URL
    return (
        f"Audience pages: {site}/p/internal/ (sign in as staff at {site}/admin/login/), "
        f"{site}/p/tailspin-toys/ (Tailspin Toys contacts) and {site}/p/northwind-traders/ "
        f"(Northwind Traders contacts), contacts signing in at {site}/portal/login/."
    )
