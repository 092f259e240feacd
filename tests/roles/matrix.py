"""The role matrix: every console page and action, API write and write command, as rows.

Each room's rows live in tests/roles/rows_<room>.py as `ROWS: list[Row]`. test_matrix.py
runs every row as a member of every role and checks that the action is allowed exactly
when core.roles.ROLES gives the role that action, and that every action in
core.roles.ACTIONS has at least one row, so a new action cannot be added without one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

# A row performs its request (or command) as the given user and returns what happened:
# the HTTP status, or 403 for a command refused with PermissionDenied / CommandError.
Perform = Callable[[Client, User], int]


@dataclass(frozen=True)
class Row:
    action: str  # a key of core.roles.ACTIONS
    interface: str  # "console", "api", "admin" or "command"
    name: str  # what a reader of a failure needs: "POST /manage/incidents/<id>/resolve/"
    perform: Perform
    # Statuses that mean "allowed" (a form error or a 404 on a made-up id is a pass of the
    # permission check, never a 403).
    ok: tuple[int, ...] = (200, 201, 204, 302, 303)
    setup: Callable[[], Any] | None = None  # builds what the row needs, once per role
