"""Demo alert intake: one Prometheus Alertmanager integration a new user can fire a test
alert at (the README's "Try an alert" command), with mapping rules for the demo's Google
Cloud products.

Its bearer token is published, like the demo passwords: `make run` prints it with the
intake URL. Created through `alerts.services`; keyed on its name, and an existing
integration (even with its token rotated) is left exactly as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction

from alerts import services
from alerts.models import Alert, AlertGroup, Integration, secret_hash
from incidents.models import ImpactLevel, Incident, IncidentImpact, Product

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


def past_alert(incident: Incident, *, title: str, fingerprint: str, labels: dict[str, str]) -> bool:
    """Record that the demo integration's alert fired first for a retold incident: it
    fired before anyone declared, on the incident's first impact window, and ended with
    it. The intake services open drafts for new alerts; a retold past needs only the
    rows the staff timeline reads (postmortems.selectors). True when it was added."""
    integration = Integration.objects.filter(name=INTEGRATION_NAME).first()
    window = incident.windows.order_by("started_at", "id").first()
    if integration is None or window is None or hasattr(incident, "alert_group"):
        return False
    with transaction.atomic():
        group = AlertGroup.objects.create(integration=integration, group_key=fingerprint, incident=incident)
        Alert.objects.create(
            integration=integration,
            fingerprint=fingerprint,
            group=group,
            window=window,
            status=Alert.Status.RESOLVED,
            title=title,
            labels=labels,
            starts_at=window.started_at + ALERT_AFTER_IMPACT,
            ends_at=window.ended_at,
            note="Retold by the demo: the first alert of this incident.",
            last_received_at=window.ended_at or window.started_at,
        )
    return True


# How long after the impact began the demo's retold alerts fired (their rule's `for:`).
ALERT_AFTER_IMPACT = timedelta(minutes=42)


def test_alert_hint() -> str:
    """Where to fire the README's test alert, while the demo integration keeps its token."""
    integration = Integration.objects.filter(name=INTEGRATION_NAME).first()
    if integration is None or integration.secret_hash != secret_hash(TOKEN):
        return ""
    return (
        f"Test alert: POST {intake_url(integration)} with 'Authorization: Bearer {TOKEN}' "
        '(the README\'s "Try an alert" command); the draft appears under Drafts at /manage/'
    )
