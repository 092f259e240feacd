"""The postmortems room's models, one module per part of the room."""

from __future__ import annotations

from postmortems.follow_models import ActionItemChange

__all__ = ["ActionItemChange"]
