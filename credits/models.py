"""Customers, SLA policies with their credit tiers, entitlements and credit notices.

Models hold fields and constraints; computing, approving and sending live in
`credits.services`, and the arithmetic in `credits.sla` (pure).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from credits import sla, sla_measured
from incidents.models import ImpactLevel, Incident, Location, Product


class CreditUnit(models.TextChoices):
    DAYS = sla.UNIT_DAYS, "Days of service added to the term"
    PERCENT = sla.UNIT_PERCENT, "Percent of the monthly bill"


class DowntimeSource(models.TextChoices):
    DECLARED = "declared", "Declared impact windows"
    MEASURED = "measured", "Measured from the SLI source"
    LARGER = "larger", "The larger of the two for the customer"


class NoticeState(models.TextChoices):
    COMPUTED = "computed", "Computed (awaiting review)"
    APPROVED = "approved", "Approved"
    QUEUED = "queued", "Queued for sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


# The day the first version of every policy reads from.
POLICY_EPOCH = date(1970, 1, 1)

_WEIGHT = [MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(1))]
_PERCENT = [MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(100))]


class SLAPolicy(models.Model):
    """A contract's availability promise and what is owed when it is missed."""

    Unit = CreditUnit

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    target = models.DecimalField(
        max_digits=6, decimal_places=3, validators=_PERCENT, help_text="Monthly uptime promised, e.g. 99.900."
    )
    time_zone = models.CharField(
        max_length=64, default="US/Pacific", help_text="Calendar months are measured in this time zone."
    )
    weight_major_outage = models.DecimalField(
        max_digits=4, decimal_places=3, default=Decimal(1), validators=_WEIGHT
    )
    weight_partial_outage = models.DecimalField(
        max_digits=4, decimal_places=3, default=Decimal(1), validators=_WEIGHT
    )
    weight_degraded_performance = models.DecimalField(
        max_digits=4, decimal_places=3, default=Decimal(0), validators=_WEIGHT
    )
    weight_under_maintenance = models.DecimalField(
        max_digits=4, decimal_places=3, default=Decimal(0), validators=_WEIGHT
    )
    min_downtime_minutes = models.PositiveIntegerField(
        default=0, help_text="Outages shorter than this many consecutive minutes do not count."
    )
    exclude_maintenance = models.BooleanField(
        default=True, help_text="Scheduled maintenance is not downtime."
    )
    unit = models.CharField(max_length=8, choices=Unit.choices, default=Unit.DAYS)
    cap = models.DecimalField(
        max_digits=8, decimal_places=2, null=True, blank=True, help_text="Most credit per month (same unit)."
    )
    claim_window_days = models.PositiveIntegerField(
        default=30, help_text="Days after the month ends within which the customer may claim."
    )
    # Downtime from measurements (docs/adr/0030-credits-from-measurements.md).
    downtime_source = models.CharField(
        max_length=10, choices=DowntimeSource.choices, default=DowntimeSource.DECLARED
    )
    measured_period_minutes = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(60)], help_text="Length of a period."
    )
    measured_down_above = models.DecimalField(
        max_digits=6,
        decimal_places=3,
        default=Decimal(5),
        validators=_PERCENT,
        help_text="A period is down when its error rate is above this percent.",
    )
    measured_degraded_above = models.DecimalField(
        max_digits=6,
        decimal_places=3,
        null=True,
        blank=True,
        validators=_PERCENT,
        help_text="Optionally, degraded above this lower percent.",
    )
    measured_degraded_weight = models.DecimalField(
        max_digits=4, decimal_places=3, default=Decimal(0), validators=_WEIGHT
    )
    measured_min_periods = models.PositiveSmallIntegerField(
        default=1, help_text="Fewer consecutive impacted periods than this are not downtime."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SLA policy"
        verbose_name_plural = "SLA policies"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(unit__in=CreditUnit.values), name="slapolicy_unit_valid"),
            models.CheckConstraint(condition=Q(target__gt=0, target__lte=100), name="slapolicy_target_range"),
        ]

    def __str__(self) -> str:
        return self.name

    def as_policy(self, tiers: list[CreditTier] | None = None) -> sla.Policy:
        """The pure-maths view of this policy."""
        tiers = tiers if tiers is not None else list(self.tiers.all())
        return sla.Policy(
            target=self.target,
            time_zone=self.time_zone,
            weights=(
                (ImpactLevel.MAJOR_OUTAGE.value, self.weight_major_outage),
                (ImpactLevel.PARTIAL_OUTAGE.value, self.weight_partial_outage),
                (ImpactLevel.DEGRADED_PERFORMANCE.value, self.weight_degraded_performance),
                (ImpactLevel.UNDER_MAINTENANCE.value, self.weight_under_maintenance),
            ),
            tiers=tuple(sla.Tier(below=t.below, credit=t.credit) for t in tiers),
            unit=self.unit,
            min_downtime_minutes=self.min_downtime_minutes,
            exclude_maintenance=self.exclude_maintenance,
            cap=self.cap,
        )

    def measured_definition(self) -> sla_measured.Definition:
        return sla_measured.Definition(
            down_above=self.measured_down_above,
            period_minutes=self.measured_period_minutes,
            degraded_above=self.measured_degraded_above,
            degraded_weight=self.measured_degraded_weight,
            min_consecutive=max(1, self.measured_min_periods),
        )


class CreditTier(models.Model):
    policy = models.ForeignKey(SLAPolicy, on_delete=models.CASCADE, related_name="tiers")
    below = models.DecimalField(
        max_digits=6,
        decimal_places=3,
        validators=_PERCENT,
        help_text="Applies when uptime is strictly less than this.",
    )
    credit = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        validators=[MinValueValidator(Decimal(0))],
        help_text="Days, or percent.",
    )

    class Meta:
        ordering = ["policy", "-below"]
        constraints = [models.UniqueConstraint(fields=["policy", "below"], name="credittier_unique_band")]

    def __str__(self) -> str:
        return f"< {self.below}%: {self.credit}"


class SLAPolicyVersion(models.Model):
    """A policy's terms as they read from `effective_from` (a day in the policy's time
    zone) until the next version's day. The SLAPolicy row stays the identity (name, time
    zone, unit, claim window) and mirrors its newest version's terms. The first version
    reads from the epoch. Written by `credits.services`; see
    docs/adr/0030-credits-from-measurements.md."""

    policy = models.ForeignKey(SLAPolicy, on_delete=models.CASCADE, related_name="versions")
    effective_from = models.DateField()
    terms = models.JSONField(help_text="The versioned fields, decimals as strings.")
    tiers = models.JSONField(default=list, help_text="[below, credit] pairs, as strings.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True, help_text="Who, kept if the user goes.")

    class Meta:
        ordering = ["policy", "effective_from"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "effective_from"], name="policyversion_unique_day")
        ]

    def __str__(self) -> str:
        return f"{self.policy_id} from {self.effective_from}"

    def as_version(self, policy: SLAPolicy) -> sla_measured.Version:
        """The pure-maths view: `policy` (the identity) with this version's terms."""
        shadow = SLAPolicy(name=policy.name, time_zone=policy.time_zone, unit=policy.unit)
        for name, value in self.terms.items():
            setattr(shadow, name, _term_value(name, value))
        tiers = [CreditTier(below=Decimal(b), credit=Decimal(c)) for b, c in self.tiers]
        return sla_measured.Version(
            effective_from=self.effective_from,
            policy=shadow.as_policy(tiers),
            source=shadow.downtime_source,
            definition=shadow.measured_definition(),
        )


# The terms a version holds; the rest of a policy (name, time zone, unit, claim window)
# is its identity and does not change from a date.
VERSIONED_TERMS = (
    "target",
    "cap",
    "min_downtime_minutes",
    "exclude_maintenance",
    "weight_major_outage",
    "weight_partial_outage",
    "weight_degraded_performance",
    "weight_under_maintenance",
    "downtime_source",
    "measured_period_minutes",
    "measured_down_above",
    "measured_degraded_above",
    "measured_degraded_weight",
    "measured_min_periods",
)
_INTEGER_TERMS = frozenset({"min_downtime_minutes", "measured_period_minutes", "measured_min_periods"})


def _term_value(name: str, value: object) -> object:
    if value is None or name in ("exclude_maintenance", "downtime_source"):
        return value
    if name in _INTEGER_TERMS:
        return int(str(value))
    return Decimal(str(value))


def policy_terms(policy: SLAPolicy) -> dict[str, object]:
    """A policy row's versioned terms as JSON values (decimals as strings, to the
    column's places, so equal terms compare equal however they were typed)."""
    terms: dict[str, object] = {}
    for name in VERSIONED_TERMS:
        value = getattr(policy, name)
        if isinstance(value, Decimal):
            places = SLAPolicy._meta.get_field(name).decimal_places  # type: ignore[union-attr]
            value = str(value.quantize(Decimal(1).scaleb(-places)))
        terms[name] = value
    return terms


class Customer(models.Model):
    name = models.CharField(max_length=200)
    billing_emails = models.JSONField(default=list, help_text="Billing contacts (plain addresses).")
    policy = models.ForeignKey(
        SLAPolicy,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="customers",
        help_text="Default policy for its entitlements.",
    )
    sla_eligible = models.BooleanField(default=True)
    term_end_date = models.DateField(null=True, blank=True, help_text="Day credits move this date.")
    monthly_bill = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    currency = models.CharField(max_length=3, default="USD")
    language = models.CharField(
        max_length=8,
        choices=settings.LANGUAGES,
        default="en",
        help_text="The language of the credit letters sent to this customer.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["sla_eligible"], name="customer_eligible")]
        constraints = [
            models.CheckConstraint(
                condition=Q(language__in=[code for code, _name in settings.LANGUAGES]),
                name="customer_language_valid",
            )
        ]

    def __str__(self) -> str:
        return self.name


class CustomerEntitlement(models.Model):
    """A product a customer pays for, optionally only in one region or zone."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="entitlements")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="+")
    location = models.ForeignKey(
        Location,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Empty: the product everywhere.",
    )
    policy = models.ForeignKey(
        SLAPolicy,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Empty: the customer's policy.",
    )

    class Meta:
        ordering = ["customer", "product", "location"]
        constraints = [
            models.UniqueConstraint(
                fields=["customer", "product", "location"],
                condition=Q(location__isnull=False),
                name="entitlement_unique_located",
            ),
            models.UniqueConstraint(
                fields=["customer", "product"],
                condition=Q(location__isnull=True),
                name="entitlement_unique_global",
            ),
        ]
        indexes = [models.Index(fields=["product", "location"], name="entitlement_product_loc")]

    def __str__(self) -> str:
        where = f" in {self.location}" if self.location_id else ""
        return f"{self.product}{where}"


class CreditNotice(models.Model):
    """What one customer is owed under one policy for one month, and its delivery."""

    State = NoticeState

    Unit = CreditUnit

    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="notices")
    policy = models.ForeignKey(SLAPolicy, on_delete=models.PROTECT, related_name="notices")
    period = models.CharField(max_length=7, help_text="YYYY-MM")
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    period_minutes = models.DecimalField(max_digits=10, decimal_places=2)
    downtime_minutes = models.DecimalField(max_digits=10, decimal_places=2)
    uptime_percent = models.DecimalField(max_digits=7, decimal_places=4)
    credit = models.DecimalField(max_digits=8, decimal_places=2)
    unit = models.CharField(max_length=8, choices=Unit.choices)
    credit_amount = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Money, for percent-of-bill credits.",
    )
    downtime_source = models.CharField(
        max_length=10, default=DowntimeSource.DECLARED, help_text="Where the counted downtime came from."
    )
    measured_minutes = models.DecimalField(
        max_digits=10, decimal_places=2, null=True, blank=True, help_text="Measured downtime, when measured."
    )
    measurement_note = models.CharField(
        max_length=300, blank=True, help_text="Gaps or an unreachable source."
    )
    versions = models.JSONField(
        default=list,
        blank=True,
        help_text="The policy versions that applied (several when the month spans a change): "
        "[{effective_from, start, end, target, downtime_minutes, uptime_percent, tier_credit, credit}].",
    )
    incidents = models.ManyToManyField(Incident, blank=True, related_name="credit_notices")
    claim_deadline = models.DateField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.COMPUTED)
    message = models.OneToOneField(
        "outbox.OutboundMessage",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="credit_notice",
    )
    email_message_id = models.CharField(max_length=255, blank=True, help_text="Message-ID of the email.")
    last_error = models.TextField(blank=True)
    computed_at = models.DateTimeField()
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    sent_at = models.DateTimeField(null=True, blank=True)
    term_extended_at = models.DateTimeField(
        null=True, blank=True, help_text="Set when a day credit moved the term end date (exactly once)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-period", "customer__name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["customer", "policy", "period"], name="notice_unique_per_period"),
            models.CheckConstraint(condition=Q(state__in=NoticeState.values), name="notice_state_valid"),
            models.CheckConstraint(condition=Q(unit__in=CreditUnit.values), name="notice_unit_valid"),
            models.CheckConstraint(condition=Q(period__regex=r"^\d{4}-\d{2}$"), name="notice_period_format"),
            models.CheckConstraint(
                condition=~Q(state="sent") | Q(sent_at__isnull=False), name="notice_sent_has_time"
            ),
        ]
        indexes = [models.Index(fields=["period", "state"], name="notice_period_state")]

    def __str__(self) -> str:
        return f"{self.customer} {self.period}: {self.credit} {self.unit}"

    @property
    def attempts(self) -> int:
        return self.message.attempts if self.message is not None else 0


class AuditAction(models.TextChoices):
    COMPUTED = "computed", "Computed"
    PREVIEWED = "confirm_shown", "Confirmation shown"
    APPROVED = "approved", "Approved and queued"
    SENT = "sent", "Sent"
    CANCELLED = "cancelled", "Cancelled"
    REFUSED = "refused", "Send refused (not confirmed)"
    PREPARED = "prepared", "Prepared for a second approver"


class CreditAuditEntry(models.Model):
    """Who did what to which credit notices, and when. Written by services, never edited."""

    Action = AuditAction

    at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=150, blank=True, help_text="Who, kept if the user goes.")
    via = models.CharField(max_length=16, blank=True, help_text="console, admin, api, command, outbox.")
    action = models.CharField(max_length=16, choices=Action.choices)
    period = models.CharField(max_length=7, blank=True)
    notice = models.ForeignKey(
        CreditNotice, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries"
    )
    count = models.PositiveIntegerField(default=0)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "credit audit entry"
        verbose_name_plural = "credit audit log"
        constraints = [
            models.CheckConstraint(
                condition=Q(action__in=AuditAction.values), name="creditaudit_action_valid"
            ),
            # A notice goes out once, so it is logged "Sent" once, whichever outbox hook
            # (one message, a batch, a redelivered call) records it.
            models.UniqueConstraint(
                fields=["notice"], condition=Q(action="sent"), name="creditaudit_sent_once"
            ),
        ]
        indexes = [models.Index(fields=["period", "at"], name="creditaudit_period_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_label or 'system'} {self.action} {self.period}"


class PreparedSend(models.Model):
    """A send above CREDITS_SECOND_APPROVER_ABOVE that one Finance user prepared and that
    waits for a different one to approve (four eyes). Keyed by the confirmation's
    fingerprint (ids, states and figures), so a notice recomputed after the preparation
    makes it stale and the send has to be prepared again."""

    fingerprint = models.CharField(max_length=64, unique=True)
    notice_ids = models.JSONField(default=list)
    summary = models.CharField(max_length=500, blank=True)
    prepared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    prepared_label = models.CharField(max_length=150, help_text="Who prepared, kept if the user goes.")
    prepared_at = models.DateTimeField()
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_label = models.CharField(max_length=150, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-prepared_at", "-id"]

    def __str__(self) -> str:
        return f"{self.summary} prepared by {self.prepared_label}"
