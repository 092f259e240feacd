"""Message templates are written by `incidents.services.templates` (the API writes them
too); the console's code calls them by their old names here."""

from __future__ import annotations

from incidents.services.templates import template_delete, template_save

__all__ = ["template_delete", "template_save"]
