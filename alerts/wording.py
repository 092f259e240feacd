"""The public words of an alert-fed incident: what customers see, never what fired.

An alert's own text names our thresholds and expressions ("write error rate > 5% for
10m"); that belongs in the draft's internal notes. What may become public (the title, the
timeline entries, the impact window) is built here from the mapping alone: the level, the
product and the location. Pure: plain strings in, plain strings out
(docs/adr/0008-alert-intake.md).
"""

from __future__ import annotations

# Keyed by incidents.models.ImpactLevel values: (title, the phrase after "investigating").
_LEVELS = {
    "degraded_performance": ("Degraded performance", "degraded performance"),
    "partial_outage": ("Partial outage", "a partial outage"),
    "major_outage": ("Major outage", "a major outage"),
    "under_maintenance": ("Maintenance", "maintenance work"),
}


def _where(product: str, location: str) -> str:
    return f"{product} in {location}" if location else product


def public_title(*, level: str, product: str, location: str = "") -> str:
    """e.g. "Partial outage of Cloud Storage in us-central1 (Iowa)"."""
    return f"{_LEVELS[level][0]} of {_where(product, location)}"


def opening_body(*, level: str, product: str, location: str = "") -> str:
    return (
        f"We are investigating {_LEVELS[level][1]} of {_where(product, location)}. "
        "We will post an update as soon as we know more."
    )


def recurrence_body(*, level: str, product: str, location: str = "") -> str:
    return f"The problem has come back: we are investigating {_LEVELS[level][1]} of {_where(product, location)} again."


RESOLVED_BODY = "Our monitoring shows normal operation again; this incident was resolved automatically."
