"""Demo alert intake: one Prometheus Alertmanager integration a new user can fire a test
alert at (the README's "Try an alert" command), with mapping rules for the demo's Google
Cloud products.

Its bearer token is published, like the demo passwords: `make run` prints it with the
intake URL. Created through `alerts.services`; keyed on its name, and an existing
integration (even with its token rotated) is left exactly as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction

from alerts import services
from alerts.models import Integration, secret_hash
from incidents.models import ImpactLevel, IncidentImpact, Product

INTEGRATION_NAME = "Prometheus (demo)"
TOKEN = "demo-alertmanager-token"  # noqa: S105 - a published demo credential, printed by `make run`

# (matchers, product slug, level, impact, auto-publish after minutes); first match wins.
RULES: tuple[tuple[dict[str, str], str, str, str, int | None], ...] = (
    # Critical storage alerts publish themselves after 10 minutes unless staff edit them first.
    (
        {"service": "storage", "severity": "critical"},
        "cloud-storage",
        ImpactLevel.MAJOR_OUTAGE,
        IncidentImpact.CRITICAL,
        10,
    ),
    ({"service": "storage"}, "cloud-storage", ImpactLevel.PARTIAL_OUTAGE, IncidentImpact.MAJOR, None),
    ({"service": "compute"}, "compute-engine", ImpactLevel.PARTIAL_OUTAGE, IncidentImpact.MAJOR, None),
    ({"service": "bigquery"}, "bigquery", ImpactLevel.DEGRADED_PERFORMANCE, IncidentImpact.MINOR, None),
)
DEFAULT_PRODUCT = "compute-engine"


class Writer(Protocol):
    def write(self, msg: str, /) -> Any: ...


@dataclass
class AlertsDemoSummary:
    integrations_created: int = 0


def intake_url(integration: Integration) -> str:
    return f"{settings.SITE_URL}/api/v1/integrations/{integration.pk}/alerts/"


def load(*, stdout: Writer | None = None) -> AlertsDemoSummary:
    summary = AlertsDemoSummary()
    products = {p.slug: p for p in Product.objects.all()}
    integration = Integration.objects.filter(name=INTEGRATION_NAME).first()
    if integration is None and DEFAULT_PRODUCT in products:
        with transaction.atomic():
            integration = services.integration_create(
                name=INTEGRATION_NAME,
                kind=Integration.Kind.ALERTMANAGER,
                default_product=products[DEFAULT_PRODUCT],
                default_level=ImpactLevel.DEGRADED_PERFORMANCE,
                secret=TOKEN,
            )
            for position, (matchers, slug, level, impact, minutes) in enumerate(RULES, start=1):
                services.rule_save(
                    integration=integration,
                    product=products[slug],
                    matchers=matchers,
                    level=level,
                    impact=impact,
                    auto_publish_after_minutes=minutes,
                    position=position,
                )
        summary.integrations_created = 1
    if stdout is not None:
        done = "created" if summary.integrations_created else "already there"
        stdout.write(f"Alert intake: integration {INTEGRATION_NAME!r} {done}\n")
    return summary


def test_alert_hint() -> str:
    """Where to fire the README's test alert, while the demo integration keeps its token."""
    integration = Integration.objects.filter(name=INTEGRATION_NAME).first()
    if integration is None or integration.secret_hash != secret_hash(TOKEN):
        return ""
    return (
        f"Test alert: POST {intake_url(integration)} with 'Authorization: Bearer {TOKEN}' "
        '(the README\'s "Try an alert" command); the draft appears under Drafts at /manage/'
    )
