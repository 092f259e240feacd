"""Every role against every row of the matrix (tests/roles/matrix.py)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from core.roles import ACTIONS, ROLES
from tests import roles as roles_package
from tests.roles.matrix import Row


def _rows() -> list[Row]:
    rows: list[Row] = []
    for module in pkgutil.iter_modules(roles_package.__path__):
        if module.name.startswith("rows_"):
            rows += importlib.import_module(f"tests.roles.{module.name}").ROWS
    return rows


ROWS = _rows()


def test_every_action_has_a_row() -> None:
    covered = {row.action for row in ROWS}
    assert sorted(set(ACTIONS) - covered) == []
    assert sorted(covered - set(ACTIONS)) == []


@pytest.mark.django_db
@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("row", ROWS, ids=lambda row: f"{row.interface}:{row.name}")
def test_each_role_may_do_exactly_what_its_row_says(role: str, row: Row) -> None:
    user = User.objects.create_user(f"member-{role.lower().replace(' ', '-')}", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    if row.setup is not None:
        row.setup()
    status = row.perform(client, user)
    if row.action in ROLES[role]:
        assert status in row.ok, f"{role} should be allowed to {ACTIONS[row.action]} ({row.name}): {status}"
    else:
        assert status == 403, f"{role} should be refused {ACTIONS[row.action]} ({row.name}): {status}"
