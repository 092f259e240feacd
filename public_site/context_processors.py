from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from core.text import site_title
from public_site.languages import language_links


def site(request: HttpRequest) -> dict[str, Any]:
    return {
        "SITE_NAME": settings.SITE_NAME,
        "SITE_TITLE": site_title(settings.SITE_NAME),
        "DISPLAY_TIME_ZONE": settings.DISPLAY_TIME_ZONE,
        "LIVE_REFRESH_SECONDS": settings.LIVE_REFRESH_SECONDS,
        # Lazy: only the public base template reads it.
        "LANGUAGE_LINKS": lambda: language_links(request),
    }
