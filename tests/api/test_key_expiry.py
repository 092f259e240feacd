"""Issue 31: API keys expire (`expires_at`, refused in the past or without a zone; an
expired key is a 401 that says so), and an Administrator (`users.manage`) lists and
revokes other users' keys, which the Integrations role (keys of its own only) cannot."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.utils import timezone

from api import services
from api.models import ApiKey
from tests.api.keys import key_for

pytestmark = pytest.mark.django_db


def staff(name: str, *roles: str) -> User:
    user = User.objects.create_user(name, f"{name}@example.org", "pw", is_staff=True)
    for role in roles:
        user.groups.add(Group.objects.get(name=role))
    return user


def api(user: User, scope: str = "write") -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key_for(user, scope)}")


def create(client: Client, body: dict[str, Any]) -> Any:
    return client.post("/api/v1/keys/", json.dumps(body), content_type="application/json")


def test_a_key_with_an_expiry_works_until_then_and_is_a_401_after() -> None:
    dana = staff("dana", "Integrations")
    expires = timezone.now() + timedelta(days=1)
    made = create(api(dana), {"name": "ci", "scope": "read", "expires_at": expires.isoformat()})
    assert made.status_code == 201, made.content
    assert made["Location"].endswith(f"/api/v1/keys/{made.json()['id']}/")
    key = ApiKey.objects.get(pk=made.json()["id"])
    assert key.expires_at == expires
    own = Client(HTTP_AUTHORIZATION=f"Bearer {made.json()['key']}")
    assert own.get("/api/v1/keys/").status_code == 200
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = own.get("/api/v1/keys/")
    assert expired.status_code == 401
    assert "expired" in expired.json()["detail"]
    assert expired["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "expires_at, message",
    [
        ("2020-01-01T00:00:00Z", "in the future"),
        ("2099-01-01T00:00:00", "time zone"),
        ("tomorrow", "Datetime has wrong format"),
    ],
)
def test_a_bad_expiry_is_a_400_naming_the_field(expires_at: str, message: str) -> None:
    dana = staff("dana", "Integrations")
    answer = create(api(dana), {"name": "ci", "expires_at": expires_at})
    assert answer.status_code == 400, answer.content
    assert message in " ".join(answer.json()["errors"]["expires_at"])
    assert ApiKey.objects.filter(user=dana).count() == 1  # only the one the test made


def test_the_service_refuses_a_naive_or_past_expiry_too() -> None:
    dana = staff("dana", "Integrations")
    with pytest.raises(ValidationError, match="time zone"):
        services.api_key_create(
            user=dana, name="x", scope="read", actor=dana, expires_at=timezone.now().replace(tzinfo=None)
        )
    with pytest.raises(ValidationError, match="future"):
        services.api_key_create(
            user=dana, name="x", scope="read", actor=dana, expires_at=timezone.now() - timedelta(minutes=1)
        )


def test_an_administrator_lists_and_revokes_other_users_keys() -> None:
    dana = staff("dana", "Integrations")
    danas = services.api_key_create(user=dana, name="leaked", scope="read", actor=dana).key
    admin = api(staff("root", "Administrator"))
    everyone = admin.get("/api/v1/keys/?everyone=true")
    assert everyone.status_code == 200
    listed = {k["id"]: k["owner"] for k in everyone.json()}
    assert listed[danas.pk] == "dana"
    assert admin.get(f"/api/v1/keys/{danas.pk}/").json()["name"] == "leaked"
    assert admin.delete(f"/api/v1/keys/{danas.pk}/").status_code == 204
    danas.refresh_from_db()
    assert danas.revoked_at is not None


def test_without_users_manage_only_ones_own_keys_are_seen_or_revoked() -> None:
    dana = staff("dana", "Integrations")
    erin = staff("erin", "Integrations")
    erins = services.api_key_create(user=erin, name="erin's", scope="read", actor=erin).key
    client = api(dana)
    refused = client.get("/api/v1/keys/?everyone=true")
    assert refused.status_code == 403
    assert "manage users and roles" in refused.json()["detail"]
    assert erins.pk not in [k["id"] for k in client.get("/api/v1/keys/").json()]
    assert client.get(f"/api/v1/keys/{erins.pk}/").status_code == 404
    assert client.delete(f"/api/v1/keys/{erins.pk}/").status_code == 404
    erins.refresh_from_db()
    assert erins.revoked_at is None
    # The service says the same to any door that would try.
    with pytest.raises(PermissionDenied, match="manage users and roles"):
        services.api_key_revoke(key=erins, actor=dana)


def test_an_unknown_query_parameter_on_the_key_list_is_a_400() -> None:
    answer = api(staff("dana", "Integrations")).get("/api/v1/keys/?user=erin")
    assert answer.status_code == 400 and "user" in answer.json()["errors"]
