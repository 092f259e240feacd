"""Demo logins, one per role of core.roles (docs/adr/0010-roles.md), listed by `make run`.

Each is a staff account in its role's group, with the password `<name>-demo`. An existing
account keeps its password and flags; it is only put back in its group.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from core.roles import ROLES

# (username, role): the names `make run` prints.
DEMO_USERS: tuple[tuple[str, str], ...] = (
    ("viewer", "Viewer"),
    ("responder", "Responder"),
    ("approver", "Report approver"),
    ("finance", "Finance"),
    ("integrations", "Integrations"),
    ("admin", "Administrator"),
)
assert {role for _, role in DEMO_USERS} == set(ROLES), "one demo login per role of core.roles"


class Writer(Protocol):
    def write(self, msg: str, /) -> Any: ...


def password(username: str) -> str:
    return f"{username}-demo"


def join(user: Any, role: str) -> None:
    """Put the user in the role's group (the group is made by migrations)."""
    user.groups.add(Group.objects.get(name=role))


def ensure_role_users(out: Writer | None = None) -> int:
    """Create the missing demo logins; the number created."""
    user_model = get_user_model()
    created = 0
    for username, role in DEMO_USERS:
        user = user_model.objects.filter(username=username).first()
        if user is None:
            user = user_model.objects.create_user(
                username, f"{username}@example.com", password(username), is_staff=True
            )
            created += 1
            if out is not None:
                out.write(f"  created {role} user {username!r}\n")
        join(user, role)
    return created
