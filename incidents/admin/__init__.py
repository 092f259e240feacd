"""The Django admin for the incident domain: catalogue, incidents, action items.

Every save calls a service (core.admin.ServiceModelAdmin turns a service's refusal into
form errors), so the domain rules hold whichever page a person uses.
"""

from incidents.admin import action_items, catalogue, incidents

__all__ = ["action_items", "catalogue", "incidents"]
