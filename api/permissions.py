"""Who may do what. Anonymous callers read public data; only staff write.

A request without credentials is answered 401 (so a client knows to send a token); a
request with a valid token of a non-staff user is answered 403.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request


def is_staff(request: Request) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


class ReadPublicWriteStaff(BasePermission):
    """Reads for everyone (the view narrows what non-staff see); writes for staff."""

    message = "Writing requires a staff token."

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.method in SAFE_METHODS or is_staff(request)


class StaffOnly(BasePermission):
    """Staff-only resources (action items, customers, SLA policies, credits, subscribers).

    Other apps use this on the viewsets they register in `api.urls`.
    """

    message = "This resource requires a staff token."

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_staff(request)
