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


_MEASURES = ("detect_us", "first_update_us", "resolve_us", "cadence_us")


class ScopeIncident(models.Model):
    """One incident as one scope sees it: every incident in scope "all", and in "p<id>"
    and "g<id>" for each product (and its group) it has a window on, with the worst level
    of those windows. The month is the display zone's month of its start: the page's
    periods are whole months, so a range is a few month keys. Not a foreign key: the row
    outlives a deleted incident until the write's hook takes back what it counted
    (docs/adr/0035-scope-facts.md)."""

    scope = models.CharField(max_length=16)
    incident_id = models.BigIntegerField()
    month = models.DateField()  # the first day of the month its impact started in
    severity = models.PositiveSmallIntegerField()  # worst level in scope, 0 without any
    is_maintenance = models.BooleanField()
    is_open = models.BooleanField()
    detect_us = models.BigIntegerField(null=True)
    first_update_us = models.BigIntegerField(null=True)
    resolve_us = models.BigIntegerField(null=True)
    cadence_us = models.BigIntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "incident_id"], name="scope_incident_once")]
        indexes = [
            models.Index(fields=["incident_id"], name="scope_incident_of"),
            # Each measure of a scope in rank order, the month beside it to filter the
            # range inside the index.
            *(
                models.Index(
                    fields=["scope", measure, "incident_id"],
                    include=["month"],
                    condition=Q(**{f"{measure}__isnull": False}),
                    name=f"scope_{measure.removesuffix('_us')}_rank",
                )
                for measure in _MEASURES
            ),
        ]

    def __str__(self) -> str:
        return f"Incident {self.incident_id} in scope {self.scope}"


class ScopeFacts(models.Model):
    """How many incidents of a scope started in a month, by worst level, maintenance
    and open flags, with how many have each measure: the sums of `ScopeIncident`, moved
    by the same hook (by difference), so the page's counts read a few rows per month."""

    scope = models.CharField(max_length=16)
    month = models.DateField()
    severity = models.PositiveSmallIntegerField()
    is_maintenance = models.BooleanField()
    is_open = models.BooleanField()
    n = models.IntegerField()
    n_detect = models.IntegerField()
    n_first_update = models.IntegerField()
    n_resolve = models.IntegerField()
    n_cadence = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope", "month", "severity", "is_maintenance", "is_open"], name="scope_facts_cell"
            )
        ]

    def __str__(self) -> str:
        return f"{self.n} incidents of {self.scope} in {self.month:%Y-%m}"


class DowntimeMonth(models.Model):
    """Each product's time at each worst level per display-zone month, summed from its
    closed `ImpactStretch`es clipped to the month (whole microseconds). Stretches still
    open or ending after now are read live and replace their share here."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    month = models.DateField()
    severity = models.PositiveSmallIntegerField()
    micros = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product", "month", "severity"], name="downtime_month_cell")
        ]

    def __str__(self) -> str:
        return f"Severity {self.severity} on product {self.product_id} in {self.month:%Y-%m}"
