"""Role-matrix rows of the API room: API keys (apikey.manage) and users (users.manage)."""

from __future__ import annotations

import json

from django.contrib.auth.models import User
from django.test import Client

from api.models import ApiKey
from tests.api.keys import key_for
from tests.roles.matrix import Row


def _page_create(client: Client, user: User) -> int:
    return client.post("/api/keys/", {"action": "create", "name": "bot", "scope": "read"}).status_code


def _page_revoke(client: Client, user: User) -> int:
    key = _own_key(user)
    return client.post("/api/keys/", {"action": "revoke", "key": key.pk}).status_code


def _own_key(user: User) -> ApiKey:
    key_for(user, "read")
    return ApiKey.objects.filter(user=user).latest("id")


def _bearer(user: User) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key_for(user, 'write')}")


def _api_create(client: Client, user: User) -> int:
    body = json.dumps({"name": "bot", "scope": "read"})
    return _bearer(user).post("/api/v1/keys/", data=body, content_type="application/json").status_code


def _api_revoke(client: Client, user: User) -> int:
    key = _own_key(user)
    return _bearer(user).delete(f"/api/v1/keys/{key.pk}/").status_code


def _admin_add_user(client: Client, user: User) -> int:
    return client.get("/admin/auth/user/add/").status_code


def _admin_users(client: Client, user: User) -> int:
    return client.get("/admin/auth/user/").status_code


ROWS: list[Row] = [
    Row("apikey.manage", "console", "POST /api/keys/ (create)", _page_create, ok=(200,)),
    Row("apikey.manage", "console", "POST /api/keys/ (revoke)", _page_revoke),
    Row("apikey.manage", "api", "POST /api/v1/keys/", _api_create, ok=(201,)),
    Row("apikey.manage", "api", "DELETE /api/v1/keys/<id>/", _api_revoke, ok=(204,)),
    Row("users.manage", "admin", "GET /admin/auth/user/", _admin_users, ok=(200,)),
    Row("users.manage", "admin", "GET /admin/auth/user/add/", _admin_add_user, ok=(200,)),
]
