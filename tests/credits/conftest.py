from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from tests.outbox.conftest import broker, outbox_redis_url

__all__ = ["broker", "outbox_redis_url"]


def finance_user(username: str) -> User:
    user = User.objects.create_user(
        username, f"{username}@example.org", f"{username}-password", is_staff=True
    )
    user.groups.add(Group.objects.get(name="Finance"))
    return user


@pytest.fixture
def fiona(db: None) -> User:
    """A Finance user (prepares and sends credits)."""
    return finance_user("fiona")


@pytest.fixture
def frank(db: None) -> User:
    """A second Finance user: the other pair of eyes."""
    return finance_user("frank")
