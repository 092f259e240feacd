from __future__ import annotations

from django.apps import AppConfig


class PublicConfig(AppConfig):
    name = "public_site"
    verbose_name = "Public status site"
