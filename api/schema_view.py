"""/api/schema/, built once per process (a deploy restarts the processes) and served from
memory; anonymous callers are throttled (API_THROTTLE_SCHEMA). Apart from api.schema,
which DRF imports while drf_spectacular.views is still loading."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from django.conf import settings
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.throttling import SchemaThrottle

# Building takes 150-330 ms and the result only changes with the code or the settings:
# (settings digest, version, language) -> the schema document.
_built: dict[tuple[str, str, str], Any] = {}
_building = threading.Lock()


def _settings_digest() -> str:
    # What a running process can change: the settings tests override.
    text = repr((settings.ROOT_URLCONF, settings.SITE_URL, settings.SPECTACULAR_SETTINGS.get("VERSION")))
    return hashlib.sha256(text.encode()).hexdigest()


class SchemaView(SpectacularAPIView):
    """The schema, built once and served from memory; anonymous callers are throttled."""

    throttle_classes = [SchemaThrottle]

    def _get_schema_response(self, request: Request) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        key = (_settings_digest(), str(version or ""), request.GET.get("lang", ""))
        schema = _built.get(key)
        if schema is None:
            with _building:  # one build at a time: concurrent first requests wait for it
                schema = _built.get(key)
                if schema is None:
                    generator = self.generator_class(
                        urlconf=self.urlconf, api_version=version, patterns=self.patterns
                    )
                    schema = _built[key] = generator.get_schema(request=request, public=self.serve_public)
        filename = self._get_filename(request, version)
        return Response(data=schema, headers={"Content-Disposition": f'inline; filename="{filename}"'})
