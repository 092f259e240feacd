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

        # WebSub: ping the configured hub after every public change (public_site/websub.py).
        from edge import version
        from public_site.websub import public_state_bumped

        if public_state_bumped not in version.bumped:
            version.bumped.append(public_state_bumped)
