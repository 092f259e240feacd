"""The incident room's enumerations, backed in the models by CHECK constraints.

Kept apart from incidents.models so that the models module stays a size a person can
hold; incidents.models re-exports every name, so `from incidents.models import ...` works.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class LocationKind(models.TextChoices):
    GLOBAL = "global", _("Global")
    REGION = "region", _("Region")
    ZONE = "zone", _("Zone")


class IncidentKind(models.TextChoices):
    INCIDENT = "incident", _("Incident")
    MAINTENANCE = "maintenance", _("Scheduled maintenance")


class IncidentStatus(models.TextChoices):
    # Incident statuses, with the Statuspage enum strings ...
    INVESTIGATING = "investigating", _("Investigating")
    IDENTIFIED = "identified", _("Identified")
    MONITORING = "monitoring", _("Monitoring")
    RESOLVED = "resolved", _("Resolved")
    POSTMORTEM = "postmortem", _("Postmortem")
    # ... and the scheduled-maintenance ones.
    SCHEDULED = "scheduled", _("Scheduled")
    IN_PROGRESS = "in_progress", _("In progress")
    VERIFYING = "verifying", _("Verifying")
    COMPLETED = "completed", _("Completed")


class IncidentImpact(models.TextChoices):
    NONE = "none", _("None")
    MINOR = "minor", _("Minor")
    MAJOR = "major", _("Major")
    CRITICAL = "critical", _("Critical")


class ImpactLevel(models.TextChoices):
    DEGRADED_PERFORMANCE = "degraded_performance", _("Degraded performance")
    PARTIAL_OUTAGE = "partial_outage", _("Partial outage")
    MAJOR_OUTAGE = "major_outage", _("Major outage")
    UNDER_MAINTENANCE = "under_maintenance", _("Under maintenance")


class ReportKind(models.TextChoices):
    MINI = "mini", _("Mini incident report")
    FULL = "full", _("Incident report")


class ReportStatus(models.TextChoices):
    # draft -> in review -> approved -> published (docs/adr/0021-report-review.md)
    DRAFT = "draft", _("Draft")
    IN_REVIEW = "in_review", _("In review")
    APPROVED = "approved", _("Approved")
    PUBLISHED = "published", _("Published")


class ActionType(models.TextChoices):
    INVESTIGATE = "investigate", _("Investigate")
    MITIGATE = "mitigate", _("Mitigate")
    REPAIR = "repair", _("Repair")
    DETECT = "detect", _("Detect")
    PREVENT = "prevent", _("Prevent")
    PROCESS = "process", _("Process")


class ActionPriority(models.TextChoices):
    P0 = "P0", "P0"
    P1 = "P1", "P1"
    P2 = "P2", "P2"
    P3 = "P3", "P3"


class ActionStatus(models.TextChoices):
    OPEN = "open", _("Open")
    IN_PROGRESS = "in_progress", _("In progress")
    DONE = "done", _("Done")
    WONT_DO = "wont_do", _("Won't do")
