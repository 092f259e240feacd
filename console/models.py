"""The console keeps no models of its own: message templates moved to
`incidents.message_templates` when the API began to manage them too (the console and the
API are siblings and may not import each other). Re-exported for the console's code."""

from __future__ import annotations

from incidents.message_templates import MessageTemplate, TemplateKind

__all__ = ["MessageTemplate", "TemplateKind"]
