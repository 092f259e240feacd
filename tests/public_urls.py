"""Every public read, listed once: the outage, caching and bad-input tests walk the same set."""

from __future__ import annotations

API_READS = [
    "/api/v2/summary.json",
    "/api/v2/status.json",
    "/api/v2/components.json",
    "/api/v2/incidents.json",
    "/api/v2/incidents/unresolved.json",
    "/api/v2/scheduled-maintenances.json",
    "/api/v2/scheduled-maintenances/upcoming.json",
    "/api/v2/scheduled-maintenances/active.json",
    "/incidents.json",
    "/products.json",
    "/api/v1/status/",
    "/api/v1/products/",
    "/api/v1/locations/",
    "/api/v1/incidents/",
    "/api/v1/maintenance/",
]


def public_urls(*, incident_id: str, product_slug: str, month: str = "2026-11") -> list[str]:
    """The pages, feeds and API reads an anonymous visitor can ask for."""
    return [
        "/",
        "/history/",
        f"/history/?month={month}",
        f"/products/{product_slug}/",
        f"/incidents/{incident_id}/",
        "/history.atom",
        "/history.rss",
        *API_READS,
        "/subscribe/",
        "/maintenance.ics",
    ]
