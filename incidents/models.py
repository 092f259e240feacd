"""The incident domain: products, locations, incidents, impact, timeline, reports.

Models hold fields, constraints and cheap properties. Every rule that changes data
lives in `incidents.services`; every read with a rule in it lives in
`incidents.selectors`. Enum fields are backed by database CHECK constraints so that a
bad value is refused by the database, not only by a form.
"""

from __future__ import annotations

import secrets
import string

from django.conf import settings
from django.db import models
from django.db.models import F, Q

# The enums live in incidents.choices; imported here, they stay importable from here.
from incidents.choices import (
    ActionPriority,
    ActionStatus,
    ActionType,
    ImpactLevel,
    IncidentImpact,
    IncidentKind,
    IncidentStatus,
    LocationKind,
    ReportKind,
    ReportStatus,
)


def _choices_check(field: str, choices: type[models.TextChoices], name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name)


def _rendered(source: str) -> models.TextField:  # type: ignore[type-arg]
    """The sanitised HTML of a Markdown field, rendered by the services when it is
    written (incidents.markdown), so that no reader ever runs Markdown."""
    return models.TextField(blank=True, default="", editable=False, help_text=f"Rendered from {source}.")


_PUBLIC_ID_ALPHABET = string.ascii_lowercase + string.digits


def new_public_id() -> str:
    """A short, unguessable, URL-safe id (the Statuspage format uses 12 characters)."""
    return "".join(secrets.choice(_PUBLIC_ID_ALPHABET) for _ in range(12))


INCIDENT_STATUSES = (
    IncidentStatus.INVESTIGATING,
    IncidentStatus.IDENTIFIED,
    IncidentStatus.MONITORING,
    IncidentStatus.RESOLVED,
    IncidentStatus.POSTMORTEM,
)
MAINTENANCE_STATUSES = (
    IncidentStatus.SCHEDULED,
    IncidentStatus.IN_PROGRESS,
    IncidentStatus.VERIFYING,
    IncidentStatus.COMPLETED,
)
CLOSED_STATUSES = (IncidentStatus.RESOLVED, IncidentStatus.POSTMORTEM, IncidentStatus.COMPLETED)


class ProductGroup(models.Model):
    name = models.CharField(max_length=100, unique=True)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name


class Product(models.Model):
    """A component of the status page: Gmail, Cloud Storage, ..."""

    public_id = models.CharField(max_length=12, unique=True, default=new_public_id, editable=False)
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    description_html = _rendered("description")
    position = models.PositiveIntegerField(default=0)
    group = models.ForeignKey(
        ProductGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="products"
    )
    is_public = models.BooleanField(default=True, help_text="Shown on the public page and public API.")
    # Retired from the catalogue: off the status page and closed to new impact, while the
    # incidents that had impact on it keep telling their history (a product with history
    # is archived, never deleted).
    archived_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Moves (in the write's transaction) whenever anything the product's public row shows
    # changes: its fields or the counted impact on it. Caches key on it.
    public_version = models.PositiveBigIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "name"]
        indexes = [models.Index(fields=["is_public", "position"], name="product_public_pos")]

    def __str__(self) -> str:
        return self.name


class Location(models.Model):
    """A place impact can be scoped to: global, a region, or a zone within a region."""

    Kind = LocationKind

    name = models.SlugField(max_length=64, unique=True, help_text="e.g. us-central1 or us-central1-b")
    display_name = models.CharField(max_length=100, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.REGION)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            _choices_check("kind", LocationKind, "location_kind_valid"),
            models.CheckConstraint(condition=~Q(parent=F("id")), name="location_not_own_parent"),
        ]

    def __str__(self) -> str:
        return self.display_name or self.name

    @property
    def label(self) -> str:
        return self.display_name or self.name


class Incident(models.Model):
    """An incident or a scheduled maintenance, as told to the public."""

    Kind = IncidentKind

    Status = IncidentStatus

    Impact = IncidentImpact

    INCIDENT_STATUSES = INCIDENT_STATUSES
    MAINTENANCE_STATUSES = MAINTENANCE_STATUSES
    CLOSED_STATUSES = CLOSED_STATUSES

    public_id = models.CharField(max_length=12, unique=True, default=new_public_id, editable=False)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True, help_text="Public summary (Markdown).")
    summary_html = _rendered("summary")
    internal_notes = models.TextField(blank=True, help_text="Staff only; never shown publicly.")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.INCIDENT)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INVESTIGATING)
    impact = models.CharField(max_length=10, choices=Impact.choices, default=Impact.MINOR)
    started_at = models.DateTimeField(help_text="When customer impact began.")
    detected_at = models.DateTimeField(null=True, blank=True)
    mitigated_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    scheduled_for = models.DateTimeField(null=True, blank=True)
    scheduled_until = models.DateTimeField(null=True, blank=True)
    recurrence_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="recurrences"
    )
    is_public = models.BooleanField(default=True, help_text="Shown on the public page and public API.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            _choices_check("kind", IncidentKind, "incident_kind_valid"),
            _choices_check("status", IncidentStatus, "incident_status_valid"),
            _choices_check("impact", IncidentImpact, "incident_impact_valid"),
            models.CheckConstraint(
                condition=(Q(kind="incident", status__in=[s.value for s in INCIDENT_STATUSES]))
                | Q(kind="maintenance", status__in=[s.value for s in MAINTENANCE_STATUSES]),
                name="incident_status_matches_kind",
                violation_error_message="This status does not fit the kind (incident or maintenance).",
            ),
            models.CheckConstraint(
                condition=Q(resolved_at__isnull=True) | Q(resolved_at__gte=F("started_at")),
                name="incident_resolved_after_start",
                violation_error_message="The resolution time cannot be before the start.",
            ),
            models.CheckConstraint(
                condition=Q(detected_at__isnull=True) | Q(detected_at__gte=F("started_at")),
                name="incident_detected_after_start",
                violation_error_message="The detection time cannot be before the start.",
            ),
            models.CheckConstraint(
                condition=Q(mitigated_at__isnull=True) | Q(mitigated_at__gte=F("started_at")),
                name="incident_mitigated_after_start",
                violation_error_message="The mitigation time cannot be before the start.",
            ),
            models.CheckConstraint(
                condition=Q(scheduled_for__isnull=True)
                | Q(scheduled_until__isnull=True)
                | Q(scheduled_until__gte=F("scheduled_for")),
                name="incident_schedule_ordered",
                violation_error_message="The scheduled end cannot be before the scheduled start.",
            ),
            models.CheckConstraint(
                condition=Q(kind="incident") | Q(scheduled_for__isnull=False),
                name="maintenance_has_schedule",
                violation_error_message="Scheduled maintenance needs a scheduled start.",
            ),
            models.CheckConstraint(condition=~Q(recurrence_of=F("id")), name="incident_not_own_recurrence"),
        ]
        indexes = [
            models.Index(fields=["is_public", "-started_at"], name="incident_public_started"),
            # The newest change, for the v2 page's `updated_at` (a bounded read).
            models.Index(fields=["is_public", "-updated_at"], name="incident_public_updated"),
            models.Index(fields=["status"], name="incident_status"),
            models.Index(fields=["kind", "status", "scheduled_for"], name="incident_kind_sched"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_maintenance(self) -> bool:
        return self.kind == self.Kind.MAINTENANCE

    @property
    def is_closed(self) -> bool:
        return self.status in self.CLOSED_STATUSES


class ImpactWindow(models.Model):
    """One stretch of impact on one product, optionally confined to one location.

    Product status, the history grid, uptime and SLA minutes are all derived from these
    rows. Intervals are half-open: [started_at, ended_at); an open window (no end) is
    ongoing.
    """

    Level = ImpactLevel

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="windows")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="windows")
    location = models.ForeignKey(
        Location, null=True, blank=True, on_delete=models.PROTECT, related_name="windows"
    )
    level = models.CharField(max_length=24, choices=Level.choices, default=Level.PARTIAL_OUTAGE)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True, help_text="Empty while the impact is ongoing.")
    description = models.TextField(blank=True, help_text="What customers saw (Markdown).")
    description_html = _rendered("description")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["started_at", "id"]
        constraints = [
            _choices_check("level", ImpactLevel, "window_level_valid"),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=F("started_at")),
                name="window_end_after_start",
                violation_error_message="An impact window cannot end before it starts.",
            ),
        ]
        indexes = [
            models.Index(fields=["product", "started_at"], name="window_product_start"),
            # Bounded reads (docs/adr/0019-bounded-public-reads.md): a product's windows
            # still open or ended after a date, and its newest window.
            models.Index(fields=["product", "ended_at"], name="window_product_end"),
            models.Index(fields=["product", "created_at"], name="window_product_created"),
            models.Index(fields=["ended_at"], name="window_ended"),
            models.Index(fields=["started_at"], name="window_started"),
        ]

    def __str__(self) -> str:
        where = f" in {self.location}" if self.location_id else ""
        return f"{self.get_level_display()} on {self.product}{where}"

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


class ProductDay(models.Model):
    """One product's impact on one calendar day of the display zone, summed from the
    closed windows of published incidents; a day without impact has no row. Kept by
    `incidents.daily` from `impact_changed`, read by the status page; the day still being
    lived through open windows is worked out at read time (docs/adr/0014-per-day-summary.md).
    """

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="+")
    # The display zone the day belongs to: rows of another zone are ignored until
    # `manage.py rebuild_product_days` recounts them.
    zone = models.CharField(max_length=64)
    day = models.DateField()
    level = models.CharField(max_length=24, choices=ImpactLevel.choices)
    # The time each level was the worst one that day (a minute counts once, at its worst
    # level); the page weighs them, so changing the weights needs no rebuild.
    major_outage = models.DurationField()
    partial_outage = models.DurationField()
    degraded_performance = models.DurationField()
    under_maintenance = models.DurationField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["zone", "day", "product"], name="product_day_unique"),
            _choices_check("level", ImpactLevel, "product_day_level_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.product_id} on {self.day}: {self.level}"


class ProductDayIncident(models.Model):
    """An incident behind a product's day (the day's link, tooltip and grid marks), with
    the worst level it had on the product that day; `rank` orders them worst first, then
    by first impact that day."""

    product_day = models.ForeignKey(ProductDay, on_delete=models.CASCADE, related_name="incidents")
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="+")
    level = models.CharField(max_length=24, choices=ImpactLevel.choices)
    rank = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["product_day", "rank"], name="product_day_incident_rank"),
            _choices_check("level", ImpactLevel, "product_day_incident_level_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.incident_id} on {self.product_day_id}"


class IncidentUpdate(models.Model):
    """A timeline entry: what we knew and said at a given time."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="updates")
    status = models.CharField(max_length=16, choices=Incident.Status.choices)
    body = models.TextField(help_text="Markdown.")
    body_html = _rendered("body")
    display_at = models.DateTimeField(help_text="Shown time; may be backdated.")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    notify_subscribers = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True, help_text="Posting time.")
    edited_at = models.DateTimeField(null=True, blank=True, help_text="Last correction of the text.")

    class Meta:
        ordering = ["-display_at", "-id"]
        constraints = [_choices_check("status", IncidentStatus, "update_status_valid")]
        indexes = [models.Index(fields=["incident", "-display_at"], name="update_incident_display")]

    def __str__(self) -> str:
        return f"{self.get_status_display()} at {self.display_at:%Y-%m-%d %H:%M}"


class IncidentUpdateRevision(models.Model):
    """The text a published update had before a correction (docs/adr/0013-posted-and-shown-times.md)."""

    update = models.ForeignKey(IncidentUpdate, on_delete=models.CASCADE, related_name="revisions")
    body = models.TextField(help_text="The text before this correction (Markdown).")
    body_html = _rendered("body")
    edited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    edited_at = models.DateTimeField(help_text="When the text was replaced.")

    class Meta:
        ordering = ["edited_at", "id"]

    def __str__(self) -> str:
        return f"Revision of {self.update} at {self.edited_at:%Y-%m-%d %H:%M}"


class IncidentNote(models.Model):
    """A staff-only note, such as the reason for a level change posted without a public
    update. Never shown publicly."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="notes")
    body = models.TextField(help_text="Plain text.")
    at = models.DateTimeField(help_text="The time the note is about (a level change's time).")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"Note on {self.incident} at {self.at:%Y-%m-%d %H:%M}"


class IncidentReport(models.Model):
    """The postmortem: one per incident, in the four sections of a public report."""

    Kind = ReportKind

    Status = ReportStatus

    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="report")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.FULL)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT)
    summary = models.TextField(blank=True, help_text="Markdown.")
    summary_html = _rendered("summary")
    root_cause = models.TextField(blank=True, help_text="Markdown.")
    root_cause_html = _rendered("root_cause")
    remediation = models.TextField(blank=True, help_text="Remediation and prevention (Markdown).")
    remediation_html = _rendered("remediation")
    impact_description = models.TextField(blank=True, help_text="Detailed description of impact (Markdown).")
    impact_description_html = _rendered("impact_description")
    published_at = models.DateTimeField(null=True, blank=True)
    # Review (docs/adr/0021-report-review.md): who wrote it, who approved this text, and
    # when a published report's text was last revised.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    revised_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            _choices_check("kind", ReportKind, "report_kind_valid"),
            _choices_check("status", ReportStatus, "report_status_valid"),
            models.CheckConstraint(
                condition=~Q(status="published") | Q(published_at__isnull=False),
                name="report_published_has_time",
                violation_error_message="A published report needs a publication time.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.incident}"

    @property
    def is_published(self) -> bool:
        return self.status == self.Status.PUBLISHED

    @property
    def is_approved(self) -> bool:
        return self.status == self.Status.APPROVED


class ActionItem(models.Model):
    """Follow-up work from an incident (the prevention list of a report)."""

    Type = ActionType

    Priority = ActionPriority

    Status = ActionStatus

    OPEN_STATUSES = (ActionStatus.OPEN, ActionStatus.IN_PROGRESS)

    # The one list of what staff set on an item, in the order forms and the API show it:
    # the service accepts these, the console form and the API serializers are built on it.
    FIELDS = (
        "title",
        "description",
        "type",
        "priority",
        "status",
        "owner",
        "due_date",
        "tracker_url",
        "is_public",
    )
    # A row of a table of items (console report, admin inline): the long Markdown
    # description is written on the item's own page.
    ROW_FIELDS = tuple(name for name in FIELDS if name != "description")

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="action_items")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    description_html = _rendered("description")
    type = models.CharField(max_length=12, choices=Type.choices, default=Type.PREVENT)
    priority = models.CharField(max_length=2, choices=Priority.choices, default=Priority.P2)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="action_items",
    )
    due_date = models.DateField(null=True, blank=True)
    tracker_url = models.URLField(blank=True)
    is_public = models.BooleanField(default=False, help_text="Listed on the published report.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["priority", "due_date", "id"]
        constraints = [
            _choices_check("type", ActionType, "action_type_valid"),
            _choices_check("priority", ActionPriority, "action_priority_valid"),
            _choices_check("status", ActionStatus, "action_status_valid"),
        ]
        indexes = [models.Index(fields=["status", "due_date"], name="action_status_due")]

    def __str__(self) -> str:
        return self.title


class DeclareGuard(models.Model):
    """The row a staff declare locks, one per normalised title: two simultaneous declares
    of one title queue on it, and the second sees the first (docs/adr/0009-one-write-path.md)."""

    key = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the normalised title.")
    incident = models.ForeignKey(Incident, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    declared_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.key


class HistoryCount(models.Model):
    """How many public incidents started in one month of the display zone: on the whole
    page (no product), or with a window on one product. The archive's month list and a
    product page's "Page 1 of N" read these few rows instead of counting the history;
    `incidents.history_counts` keeps them, inside every write that changes the public
    state (docs/adr/0019-bounded-public-reads.md)."""

    zone = models.CharField(max_length=64, help_text="The display time zone the month is in.")
    month = models.DateField(help_text="The first day of the month.")
    product = models.ForeignKey(Product, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["zone", "month"], condition=Q(product__isnull=True), name="history_count_page_month"
            ),
            models.UniqueConstraint(
                fields=["zone", "month", "product"],
                condition=Q(product__isnull=False),
                name="history_count_product_month",
            ),
        ]
        indexes = [models.Index(fields=["zone", "product", "month"], name="history_count_product")]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} ({self.zone}): {self.count}"


import incidents.message_templates  # noqa: E402, F401  (registers the templates with this app)
