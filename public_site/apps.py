from __future__ import annotations

from django.apps import AppConfig


class PublicConfig(AppConfig):
    name = "public_site"
    verbose_name = "Public status site"

    def ready(self) -> None:
        # The pages the edge renders ahead of visitors (public_site/prerender.py).
        from edge import prerender
        from public_site.prerender import prerender_paths

        prerender.register(prerender_paths)
