from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_roles(sender: AppConfig, **kwargs: Any) -> None:
    # core is the last app migrated, so every model's permissions exist by now and the
    # Administrator group gets them all (migration 0002 created the groups).
    from django.apps import apps

    from core.roles import sync_roles

    sync_roles(kwargs.get("apps") or apps)


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core helpers"

    def ready(self) -> None:
        post_migrate.connect(_sync_roles, sender=self)
