"""Who may do what. Anonymous callers read public data; only staff write.

A request without credentials is answered 401 (so a client knows to send a key); a
request with a valid key of a non-staff user, or a read-scoped key trying to write, is
answered 403.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from api.authentication import key_can_write


def is_staff(request: Request) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def may_write(request: Request) -> bool:
    return is_staff(request) and key_can_write(getattr(request, "auth", None))


class ReadPublicWriteStaff(BasePermission):
    """Reads for everyone (the view narrows what non-staff see); writes for staff."""

    message = "Writing requires a staff key with the write scope."
    # Read by api.schema: these operations are declared as open to anonymous callers.
    anonymous_reads = True

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.method in SAFE_METHODS or may_write(request)


class StaffOnly(BasePermission):
    """Staff-only resources (action items, customers, SLA policies, credits, subscribers).

    Other apps use this on the viewsets they register in `api.urls`.
    """

    message = "This resource requires a staff key (the write scope to change it)."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in SAFE_METHODS:
            return is_staff(request)
        return may_write(request)
