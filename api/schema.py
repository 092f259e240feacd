"""The OpenAPI schema generator: drf-spectacular's, told about our permission classes.

drf-spectacular marks an operation as open to anonymous callers only for DRF's own
AllowAny / IsAuthenticatedOrReadOnly, so every public GET guarded by
ReadPublicWriteStaff was documented as needing a token (schemathesis' ignored-auth
check failed on each). Safe methods under that permission add the empty requirement.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework.permissions import SAFE_METHODS

from api.permissions import ReadPublicWriteStaff


class AutoSchema(SpectacularAutoSchema):
    def get_auth(self) -> list[dict[str, Any]]:
        auths: list[dict[str, Any]] = super().get_auth()
        public_read = self.method in SAFE_METHODS and any(
            isinstance(permission, ReadPublicWriteStaff) for permission in self.view.get_permissions()
        )
        if public_read and {} not in auths:
            auths.append({})
        return auths
