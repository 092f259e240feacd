"""Alert intake: integrations, their mapping rules, the alerts they sent, and the raw payloads.

An alert is keyed by (integration, fingerprint). Alerts that the sender groups together
(Alertmanager's and Grafana's group key, the generic shape's `group`) share one
`AlertGroup`, which ties them to one incident: a draft (not public) until staff publish
it, or until its rule publishes it after N minutes of firing.

Every rule lives in `alerts.services`; reads with a rule in them in `alerts.selectors`.
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import models
from django.db.models import Q

from incidents.models import ImpactLevel, ImpactWindow, Incident, IncidentImpact, Location, Product


def new_secret() -> str:
    # 32 random bytes: a bearer token or an HMAC key nobody can guess.
    return secrets.token_urlsafe(32)


def secret_hash(secret: str) -> str:
    # A fast hash is enough: the secret is 32 random bytes, not a password to guess.
    return hashlib.sha256(secret.encode()).hexdigest()


class IntegrationKind(models.TextChoices):
    ALERTMANAGER = "alertmanager", "Prometheus Alertmanager (webhook v4)"
    GRAFANA = "grafana", "Grafana alerting (webhook contact point)"
    GENERIC = "generic", "Generic JSON (HMAC-signed)"


class AlertStatus(models.TextChoices):
    FIRING = "firing", "Firing"
    RESOLVED = "resolved", "Resolved"


class Integration(models.Model):
    """One sender of alerts, with its credentials and its rules."""

    Kind = IntegrationKind

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The generic kind's HMAC key must be kept to check signatures; a bearer token
    # (Alertmanager, Grafana) is kept only as its hash. Neither is shown after it is issued.
    secret = models.CharField(max_length=128, blank=True, help_text="HMAC-SHA256 key (generic kind only).")
    secret_hash = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of the bearer token (Alertmanager, Grafana)."
    )
    # Set by the services that issue a secret, for the one response that shows it.
    issued_secret: str = ""
    is_active = models.BooleanField(default=True)
    flap_debounce_seconds = models.PositiveIntegerField(
        default=300,
        help_text=(
            "An alert that fires again within this many seconds of resolving reopens its window "
            "instead of opening a new one; the incident resolves itself only after this quiet time."
        ),
    )
    reopen_within_minutes = models.PositiveIntegerField(
        default=24 * 60,
        help_text=(
            "An alert of the same group firing again within this many minutes of an automatic "
            "resolution reopens that incident (a recurrence) instead of opening a new draft."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=IntegrationKind.values), name="integration_kind_valid"
            )
        ]

    def __str__(self) -> str:
        return self.name


class MappingRule(models.Model):
    """Labels to product, location and level. The first matching rule (by position) wins;
    the default rule catches every alert no other rule matches."""

    integration = models.ForeignKey(Integration, on_delete=models.CASCADE, related_name="rules")
    position = models.PositiveIntegerField(default=0)
    is_default = models.BooleanField(default=False)
    matchers = models.JSONField(
        default=dict,
        blank=True,
        help_text='Labels that must all be equal, e.g. {"service": "storage", "severity": "critical"}.',
    )
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="+")
    location = models.ForeignKey(Location, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    location_labels = models.CharField(
        max_length=200,
        blank=True,
        default="zone,region",
        help_text=(
            "Labels whose value names a location, most specific first (e.g. zone,region); "
            "the first that names a known location wins over the fixed location."
        ),
    )
    level = models.CharField(max_length=24, choices=ImpactLevel.choices, default=ImpactLevel.PARTIAL_OUTAGE)
    impact = models.CharField(max_length=10, choices=IncidentImpact.choices, default=IncidentImpact.MINOR)
    auto_publish_after_minutes = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "Empty (the default): hold the draft for staff to review, edit and publish. A number: "
            "publish it by itself after this many minutes if still firing and nobody has edited it."
        ),
    )

    class Meta:
        ordering = ["integration", "-is_default", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["integration"], condition=Q(is_default=True), name="one_default_rule_per_integration"
            ),
            models.CheckConstraint(condition=Q(level__in=ImpactLevel.values), name="rule_level_valid"),
            models.CheckConstraint(condition=Q(impact__in=IncidentImpact.values), name="rule_impact_valid"),
        ]

    def __str__(self) -> str:
        if self.is_default:
            return f"default: {self.product}"
        matchers = ", ".join(f"{k}={v}" for k, v in sorted((self.matchers or {}).items()))
        return f"{matchers or 'any'}: {self.product}"


class AlertGroup(models.Model):
    """The alerts one sender grouped together, tied to the incident they opened."""

    integration = models.ForeignKey(Integration, on_delete=models.CASCADE, related_name="groups")
    group_key = models.CharField(max_length=500)
    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="alert_group")
    rule = models.ForeignKey(MappingRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    publish_due_at = models.DateTimeField(null=True, blank=True)
    draft_digest = models.CharField(
        max_length=64,
        blank=True,
        help_text="SHA-256 of the draft's title and opening message as opened: an edit stops auto-publication.",
    )
    resolve_due_at = models.DateTimeField(null=True, blank=True)
    needs_attention = models.CharField(
        max_length=300, blank=True, help_text="Why staff must look (shown on the admin list)."
    )
    is_overflow = models.BooleanField(
        default=False,
        help_text="Gathers the alert groups that came once ALERTS_MAX_OPEN_DRAFTS drafts were open.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["integration", "group_key"], name="alertgroup_key"),
            models.Index(fields=["publish_due_at"], name="alertgroup_publish_due"),
            models.Index(fields=["resolve_due_at"], name="alertgroup_resolve_due"),
        ]

    def __str__(self) -> str:
        return f"{self.integration}: {self.group_key}"


class Alert(models.Model):
    """One alert as last heard of: its current occurrence and where it put its impact."""

    Status = AlertStatus

    integration = models.ForeignKey(Integration, on_delete=models.CASCADE, related_name="alerts")
    fingerprint = models.CharField(max_length=200)
    group = models.ForeignKey(
        AlertGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts"
    )
    window = models.ForeignKey(
        ImpactWindow, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts"
    )
    rule = models.ForeignKey(MappingRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    used_default_rule = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices)
    title = models.CharField(max_length=200, blank=True)
    labels = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict)
    url = models.URLField(max_length=1000, blank=True)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    flaps = models.PositiveIntegerField(default=0, help_text="Times it fired again within the debounce.")
    note = models.CharField(max_length=300, blank=True, help_text="What the last event did, and why.")
    last_received_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["integration", "fingerprint"], name="alert_unique_fingerprint"),
            models.CheckConstraint(condition=Q(status__in=AlertStatus.values), name="alert_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.title or self.fingerprint} ({self.status})"


class ReceivedPayload(models.Model):
    """Every accepted or malformed payload, kept ALERTS_PAYLOAD_RETENTION_DAYS for debugging."""

    integration = models.ForeignKey(Integration, on_delete=models.CASCADE, related_name="payloads")
    received_at = models.DateTimeField(db_index=True)
    remote_addr = models.CharField(max_length=64, blank=True)
    status_code = models.PositiveSmallIntegerField()
    body = models.TextField()
    outcome = models.TextField(blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"{self.integration} at {self.received_at:%Y-%m-%d %H:%M:%S} ({self.status_code})"


class IntakeDelivery(models.Model):
    """A generic sender's delivery id, kept twice ALERTS_SIGNATURE_TOLERANCE_SECONDS (then
    purged) so the same delivery is refused if it comes again."""

    integration = models.ForeignKey(Integration, on_delete=models.CASCADE, related_name="+")
    # Signed with the timestamp and the body, so a captured request cannot be sent again
    # under a fresh id within the tolerance.
    delivery_id = models.CharField(max_length=200)
    received_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["integration", "delivery_id"], name="intake_delivery_once"),
        ]

    def __str__(self) -> str:
        return f"{self.integration_id}: {self.delivery_id}"
