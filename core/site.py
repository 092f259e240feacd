"""Identifiers of this status page that several rooms send out."""

from __future__ import annotations

import hashlib

from django.conf import settings


def page_id() -> str:
    """The page's stable 12-character id (derived from the site URL): `page.id` in the
    /api/v2/ documents and in Statuspage-format webhooks alike."""
    return hashlib.sha256(settings.SITE_URL.encode()).hexdigest()[:12]
