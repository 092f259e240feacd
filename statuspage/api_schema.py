"""The OpenAPI schema's tags and enum names (drf-spectacular), kept out of the settings
module: static data, nothing here comes from the environment."""

from __future__ import annotations

API_TAGS = [
    {
        "name": "status",
        "description": "The page's overall indicator and every public product's status.",
    },
    {"name": "products", "description": "What we run (Statuspage calls them components)."},
    {"name": "locations", "description": "Regions and zones an impact can be limited to."},
    {"name": "incidents", "description": "Incidents with their impact windows, timeline and report."},
    {
        "name": "maintenance",
        "description": "Scheduled maintenance, with the same shape as incidents.",
    },
    {"name": "action-items", "description": "Follow-up work from incidents (staff)."},
    {
        "name": "customers",
        "description": "Customers and their entitlements, for SLA credits (staff).",
    },
    {"name": "sla-policies", "description": "SLA targets and credit tiers (staff)."},
    {
        "name": "credit-notices",
        "description": "Monthly SLA credit notices: compute, approve, cancel (staff).",
    },
    # Issue 31, administration.
    {
        "name": "alert-integrations",
        "description": "Alert senders (Alertmanager, Grafana, generic) and their secrets (staff).",
    },
    {"name": "alert-rules", "description": "How alert labels map to products and levels (staff)."},
    {"name": "subscribers", "description": "Email and webhook subscribers (staff, read only)."},
    {
        "name": "statuspage-v2",
        "description": "The Statuspage v2 public API shape, for existing widgets.",
    },
    {"name": "google-feed", "description": "The Google status dashboard JSON shape."},
]

# One named enum per choice set, instead of generated names like StatusC00Enum.
ENUM_NAME_OVERRIDES = {
    "IncidentStatusEnum": "incidents.models.IncidentStatus",
    "IncidentOnlyStatusEnum": "api.statuspage_v2.INCIDENT_STATUS_VALUES",
    "MaintenanceStatusEnum": "api.statuspage_v2.MAINTENANCE_STATUS_VALUES",
    "OpenIncidentStatusEnum": "api.serializers.OPEN_INCIDENT_STATUSES",
    "OpenMaintenanceStatusEnum": "api.serializers.OPEN_MAINTENANCE_STATUSES",
    "ComponentStatusEnum": "api.serializers.PRODUCT_STATUSES",
    "IncidentImpactEnum": "incidents.models.IncidentImpact",
    "StatuspageIndicatorEnum": "api.statuspage_v2.INDICATORS",
    "ReportStatusEnum": "incidents.models.ReportStatus",
    "ReportKindEnum": "incidents.models.ReportKind",
    "ActionStatusEnum": "incidents.models.ActionStatus",
    "IncidentKindEnum": "incidents.models.IncidentKind",
    "LocationKindEnum": "incidents.models.LocationKind",
    "LevelEnum": "incidents.models.ImpactLevel",
    "TargetLevelEnum": "api.serializers.TARGET_LEVEL_CHOICES",
    "LanguageEnum": "core.i18n.LANGUAGE_CHOICES",
    "TemplateKindEnum": "incidents.message_templates.TemplateKind",  # issue 31, api/templates.py
    "IntegrationKindEnum": "alerts.models.IntegrationKind",
    "SubscriberKindEnum": "subscriptions.models.SubscriberKind",  # issue 31: subscribers API
    "IncidentLinkKindEnum": "postmortems.models.LinkKind",  # issue 32: api/postmortems.py
    "PageVisibilityEnum": "audiences.models.PageVisibility",  # issue 33: api/pages.py
    "TimelineVisibilityEnum": "postmortems.models.Visibility",  # issue 32: timeline entries
}
