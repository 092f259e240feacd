"""Demo customer portal access: who may sign in with a one-time email link. Tailspin
Toys buys Cloud Storage in us-central1 (the October 2026 incident touched it); Northwind
Traders buys Gmail only. Idempotent: a domain that already signs in is left alone."""

from __future__ import annotations

from credits.models import Customer
from portal import services
from portal.models import PortalAccess

# (customer name, email domain, the address `make run` suggests)
CONTACTS = (
    ("Tailspin Toys", "tailspin.example", "ops@tailspin.example"),
    ("Northwind Traders", "northwind.example", "it@northwind.example"),
)


def load() -> int:
    """Add the demo domains; how many were added."""
    added = 0
    for name, domain, _address in CONTACTS:
        customer = Customer.objects.filter(name=name).first()
        if customer is None or PortalAccess.objects.filter(domain=domain).exists():
            continue
        services.access_add(actor=None, customer=customer, domain=domain)
        added += 1
    return added
