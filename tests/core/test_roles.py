"""The roles in the database are the table in core.roles."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied

from core import roles

pytestmark = pytest.mark.django_db


def test_it_keeps_each_group_equal_to_its_row() -> None:
    for name, actions in roles.ROLES.items():
        group = Group.objects.get(name=name)
        held = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
        assert {roles.permission(a) for a in actions} <= held
        if name != "Administrator":
            assert {p for p in held if p.startswith("core.")} == {roles.permission(a) for a in actions}


def test_it_refuses_an_action_outside_the_role_with_a_message() -> None:
    viewer = User.objects.create_user("vera", is_staff=True)
    viewer.groups.add(Group.objects.get(name="Viewer"))

    assert roles.allowed(viewer, "console.view")
    with pytest.raises(PermissionDenied, match="does not allow you to send SLA credit notices"):
        roles.check(viewer, "credits.send")


def test_it_refuses_a_staff_user_without_a_role_and_an_inactive_one() -> None:
    bare = User.objects.create_user("bare", is_staff=True)
    gone = User.objects.create_user("gone", is_staff=True, is_active=False)
    gone.groups.add(Group.objects.get(name="Administrator"))

    assert not roles.allowed(bare, "console.view")
    assert not roles.allowed(gone, "console.view")


def test_it_names_unknown_actions() -> None:
    with pytest.raises(KeyError, match=r"add it to core\.roles\.ACTIONS"):
        roles.permission("credits.mint")


def test_it_gives_each_role_the_admin_pages_of_its_rooms() -> None:
    finance = User.objects.create_user("fay", is_staff=True)
    finance.groups.add(Group.objects.get(name="Finance"))

    assert finance.has_perm("credits.change_customer")
    assert not finance.has_perm("incidents.change_incident")
    assert not finance.has_perm("auth.add_user")
