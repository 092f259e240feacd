"""Helpers of the issue-31 API tests: a JSON write (running on-commit work) and a client
holding a key of a given scope for any user."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import Client, TestCase

from tests.api.keys import key_for


def send(client: Client, method: str, url: str, payload: Any = None, **headers: str) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(client, method)(
            url, data=json.dumps(payload or {}), content_type="application/json", headers=headers
        )


def client_for(user: User, scope: str = "write") -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key_for(user, scope=scope)}")
