"""Where a product's service level indicator is read from (docs/adr/0030-credits-from-measurements.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from incidents.models import Location, Product


class SliKind(models.TextChoices):
    COUNTS = "counts", "Error and valid request counters"
    ERROR_RATE = "error_rate", "Error-rate expression (percent)"


class SliSource(models.Model):
    """One product's indicator, optionally in one location, in one Prometheus.

    `{selector}` in a query is replaced by `label_selector` (e.g. `location="us-central1"`),
    and `{window}` by the period length (e.g. `5m`)."""

    Kind = SliKind

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    location = models.ForeignKey(
        Location,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Empty: everywhere.",
    )
    base_url = models.URLField(help_text="Prometheus base URL, e.g. http://127.0.0.1:9090")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.COUNTS)
    errors_query = models.CharField(
        max_length=500, blank=True, help_text="e.g. sum(increase(http_errors_total{{selector}}[{window}]))"
    )
    valid_query = models.CharField(
        max_length=500, blank=True, help_text="e.g. sum(increase(http_requests_total{{selector}}[{window}]))"
    )
    error_rate_query = models.CharField(
        max_length=500, blank=True, help_text="Percent of valid requests failing."
    )
    label_selector = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["product", "location"]
        constraints = [
            models.UniqueConstraint(
                fields=["product", "location"],
                condition=Q(location__isnull=False),
                name="slisource_unique_located",
            ),
            models.UniqueConstraint(
                fields=["product"], condition=Q(location__isnull=True), name="slisource_unique_global"
            ),
            models.CheckConstraint(condition=Q(kind__in=SliKind.values), name="slisource_kind_valid"),
        ]

    def __str__(self) -> str:
        where = f" in {self.location}" if self.location_id else ""
        return f"{self.product}{where}"
