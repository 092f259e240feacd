"""Writes of the incident domain, one module per entity.

Every change goes through these functions, whatever page, API or command it comes from.
They own their transactions, raise `ValidationError` with per-field messages, and leave
side effects (the public version bump, subscriber fan-out) to after the commit.
"""

from incidents.services._common import WindowSpec
from incidents.services.action_items import (
    ACTION_ITEM_EDITABLE_FIELDS,
    action_item_create,
    action_item_edit,
)
from incidents.services.catalogue import (
    location_create,
    location_delete,
    location_edit,
    product_create,
    product_delete,
    product_edit,
    product_group_create,
    product_group_delete,
    product_group_edit,
)
from incidents.services.incidents import (
    INCIDENT_EDITABLE_FIELDS,
    incident_delete,
    incident_edit,
    incident_open,
    incident_post_update,
    incident_post_update_with_levels,
    incident_resolve,
)
from incidents.services.publishing import incident_publish
from incidents.services.reports import report_publish, report_save, report_set_status
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
    "ACTION_ITEM_EDITABLE_FIELDS",
    "INCIDENT_EDITABLE_FIELDS",
    "LEVEL_CHOICES",
    "OPERATIONAL",
    "LevelSpec",
    "WindowSpec",
    "action_item_create",
    "action_item_edit",
    "impact_for_levels",
    "impact_levels_set",
    "impact_window_add",
    "impact_window_close",
    "impact_window_delete",
    "impact_window_edit",
    "incident_delete",
    "incident_edit",
    "incident_open",
    "incident_post_update",
    "incident_post_update_with_levels",
    "incident_publish",
    "incident_resolve",
    "location_create",
    "location_delete",
    "location_edit",
    "product_create",
    "product_delete",
    "product_edit",
    "product_group_create",
    "product_group_delete",
    "product_group_edit",
    "report_publish",
    "report_save",
    "report_set_status",
]
