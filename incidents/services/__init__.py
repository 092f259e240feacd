"""Writes of the incident domain, one module per entity.

Every change goes through these functions, whatever page, API or command it comes from.
They own their transactions, locks and double-submit guards, raise `ValidationError` with
per-field messages, and leave side effects (the public version bump, subscriber fan-out)
to after the commit (docs/adr/0009-one-write-path.md).
"""

from core.errors import InUse
from incidents.services._common import WindowSpec, markdown_field
from incidents.services.action_items import (
    ActionItemChange,
    ActionItemRejected,
    action_item_create,
    action_item_edit,
    action_items_save,
)
from incidents.services.catalogue import (
    location_create,
    location_delete,
    location_edit,
    product_archive,
    product_create,
    product_delete,
    product_edit,
    product_group_create,
    product_group_delete,
    product_group_edit,
)
from incidents.services.guards import DuplicateTitle
from incidents.services.incidents import (
    INCIDENT_EDITABLE_FIELDS,
    incident_declare,
    incident_delete,
    incident_edit,
    incident_open,
    incident_post_update,
    incident_post_update_once,
    incident_post_update_with_levels,
    incident_resolve,
)
from incidents.services.publishing import incident_draft_delete, incident_publish
from incidents.services.reports import (
    ReportRejected,
    report_approve,
    report_publish,
    report_save,
    report_save_with_action_items,
    report_set_status,
)
from incidents.services.templates import template_delete, template_save
from incidents.services.updates import incident_levels_change, incident_update_edit
from incidents.services.windows import (
    LEVEL_CHOICES,
    OPERATIONAL,
    LevelSpec,
    impact_for_levels,
    impact_levels_set,
    impact_window_add,
    impact_window_close,
    impact_window_delete,
    impact_window_edit,
)

__all__ = [
    "INCIDENT_EDITABLE_FIELDS",
    "LEVEL_CHOICES",
    "OPERATIONAL",
    "ActionItemChange",
    "ActionItemRejected",
    "DuplicateTitle",
    "InUse",
    "LevelSpec",
    "ReportRejected",
    "WindowSpec",
    "action_item_create",
    "action_item_edit",
    "action_items_save",
    "impact_for_levels",
    "impact_levels_set",
    "impact_window_add",
    "impact_window_close",
    "impact_window_delete",
    "impact_window_edit",
    "incident_declare",
    "incident_delete",
    "incident_draft_delete",
    "incident_edit",
    "incident_levels_change",
    "incident_open",
    "incident_post_update",
    "incident_post_update_once",
    "incident_post_update_with_levels",
    "incident_publish",
    "incident_resolve",
    "incident_update_edit",
    "location_create",
    "location_delete",
    "location_edit",
    "markdown_field",
    "product_archive",
    "product_create",
    "product_delete",
    "product_edit",
    "product_group_create",
    "product_group_delete",
    "product_group_edit",
    "report_approve",
    "report_publish",
    "report_save",
    "report_save_with_action_items",
    "report_set_status",
    "template_delete",
    "template_save",
]
