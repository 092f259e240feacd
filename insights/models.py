"""What the insights page reads instead of the whole history: one row of figures per
incident, and each product's impact as stretches of one worst level. Both are kept fresh
by the write services through the incident event registry (`insights.facts`) and can be
rebuilt with `manage.py rebuild_incident_facts` (docs/adr/0018-incident-facts.md).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from incidents.models import Incident, Product


class IncidentFacts(models.Model):
    """One incident's figures as `insights.metrics.incident_row` defines them, in whole
    microseconds (None where the incident has no such figure)."""

    incident = models.OneToOneField(Incident, primary_key=True, on_delete=models.CASCADE, related_name="+")
    started_at = models.DateTimeField()  # the period it counts in
    is_maintenance = models.BooleanField()
    is_public = models.BooleanField()
    is_open = models.BooleanField()  # not resolved
    # The worst level of all its windows (`incidents.uptime.SEVERITY`), 0 without any.
    severity = models.PositiveSmallIntegerField()
    detect_us = models.BigIntegerField(null=True)
    first_update_us = models.BigIntegerField(null=True)
    resolve_us = models.BigIntegerField(null=True)
    cadence_us = models.BigIntegerField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["started_at"], name="facts_started"),
            # Each measure in rank order (value, then incident), with the start to filter
            # the range in the index: the page reads its ranks without sorting.
            *(
                models.Index(
                    fields=[measure, "incident"],
                    include=["started_at"],
                    condition=Q(**{f"{measure}__isnull": False}),
                    name=f"facts_{measure.removesuffix('_us')}_rank",
                )
                for measure in ("detect_us", "first_update_us", "resolve_us", "cadence_us")
            ),
        ]

    def __str__(self) -> str:
        return f"Facts of incident {self.incident_id}"


class ImpactStretch(models.Model):
    """A stretch of time over which one level was the worst covering a product (every
    window counted, drafts included, as on the staff page). A product's stretches
    partition its covered time, so the downtime of a period is their clipped sum."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    severity = models.PositiveSmallIntegerField()  # `incidents.uptime.SEVERITY`, above 0
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)  # open: a window still open covers it

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gt=models.F("started_at")),
                name="stretch_not_empty",
            )
        ]
        indexes = [
            models.Index(fields=["product", "started_at"], name="stretch_product_start"),
            models.Index(fields=["started_at"], name="stretch_started"),
            models.Index(fields=["ended_at"], name="stretch_ended"),
        ]

    def __str__(self) -> str:
        return f"Severity {self.severity} on product {self.product_id} from {self.started_at:%Y-%m-%d %H:%M}"
