"""Upstream providers (third-party status pages we poll), what we keep of them, and the
dependencies of our products. Design: docs/adr/0031-upstream-providers.md."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from incidents.models import ImpactLevel, Incident, Location, Product
from incidents.selectors import PRODUCT_STATUS_LABELS


class Provider(models.Model):
    class Kind(models.TextChoices):
        STATUSPAGE = "statuspage_v2", "Statuspage v2 JSON (/api/v2/summary.json)"
        GOOGLE = "google", "Google-style incidents.json"
        FEED = "feed", "Atom or RSS feed"

    name = models.CharField(max_length=100, unique=True)
    url = models.URLField(max_length=500, help_text="The summary.json, incidents.json or feed address.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    poll_interval_seconds = models.PositiveIntegerField(
        default=300, help_text="How often to read it (60 s or more)."
    )
    is_shown = models.BooleanField(
        default=False, help_text="Show it in the public page's “Third-party services” section."
    )
    position = models.PositiveIntegerField(default=0)
    # Polling state (written by the poller only).
    etag = models.CharField(max_length=200, blank=True, editable=False)
    last_modified = models.CharField(max_length=100, blank=True, editable=False)
    next_poll_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_attempt_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_success_at = models.DateTimeField(null=True, blank=True, editable=False)
    failures = models.PositiveIntegerField(default=0, editable=False, help_text="Failed reads in a row.")
    last_error = models.CharField(max_length=300, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class UpstreamComponent(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="components")
    external_id = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=24, default="operational")
    position = models.PositiveIntegerField(default=0)
    is_listed = models.BooleanField(default=True, help_text="Still in the provider's latest read.")
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["provider", "position", "name"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="upstream_component_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.provider.name})"

    @property
    def status_label(self) -> str:
        # Rendered in the active language (the page cache renders each language apart).
        return str(PRODUCT_STATUS_LABELS.get(self.status, self.status))


class UpstreamIncident(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="incidents")
    external_id = models.CharField(max_length=200)
    title = models.CharField(max_length=300)
    status = models.CharField(max_length=40, blank=True)
    level = models.CharField(max_length=24, default="partial_outage")
    url = models.URLField(max_length=500, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    components = models.CharField(
        max_length=500, blank=True, help_text="What it affects, as the provider names it."
    )

    class Meta:
        ordering = ["provider", "-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="upstream_incident_unique")
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def level_label(self) -> str:
        return str(PRODUCT_STATUS_LABELS.get(self.level, self.level))


class Dependency(models.Model):
    """`product` depends on one of our products (in a location, or anywhere) or on an
    upstream component."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    on_product = models.ForeignKey(Product, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    on_location = models.ForeignKey(
        Location, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    on_component = models.ForeignKey(
        UpstreamComponent, null=True, blank=True, on_delete=models.CASCADE, related_name="dependents"
    )
    level = models.CharField(
        max_length=24,
        choices=ImpactLevel.choices,
        default=ImpactLevel.PARTIAL_OUTAGE,
        help_text="The level the suggested draft gives the dependent product.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "dependencies"
        constraints = [
            models.CheckConstraint(
                condition=(Q(on_product__isnull=False) & Q(on_component__isnull=True))
                | (Q(on_product__isnull=True) & Q(on_component__isnull=False) & Q(on_location__isnull=True)),
                name="dependency_one_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.product.name} on {self.target_label}"

    @property
    def target_label(self) -> str:
        """e.g. "Cloud Storage (us-central1)"."""
        if self.on_component is not None:
            return f"{self.on_component.name} at {self.on_component.provider.name}"
        assert self.on_product is not None
        if self.on_location is not None:
            return f"{self.on_product.name} ({self.on_location.name})"
        return self.on_product.name


class Suggestion(models.Model):
    """A draft incident suggested because a dependency degraded; one open per dependency."""

    dependency = models.ForeignKey(Dependency, on_delete=models.CASCADE, related_name="suggestions")
    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="dependency_suggestion")
    cause_level = models.CharField(max_length=24)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True, help_text="When the dependency recovered.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dependency"], condition=Q(closed_at__isnull=True), name="suggestion_one_open"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dependency}: {self.incident}"


class IncidentCause(models.Model):
    """A published incident says it is caused by a dependency: "affected through …"."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="dependency_causes")
    label = models.CharField(max_length=300, help_text="e.g. Cloud Storage (us-central1)")
    dependency = models.ForeignKey(
        Dependency, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["incident", "label"], name="incident_cause_unique")]

    def __str__(self) -> str:
        return self.label
