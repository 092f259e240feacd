from __future__ import annotations

from django.db import models

from core.roles import ACTIONS, codename


class Access(models.Model):
    """No table: the holder of the `core.<action>` permissions of core.roles."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [(codename(action), f"Can {text}") for action, text in ACTIONS.items()]

    def __str__(self) -> str:
        return "access"
