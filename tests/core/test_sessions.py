"""Issue 27: staff sessions end after an idle timeout and an absolute lifetime
(edge.middleware.SessionLifetimeMiddleware)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from freezegun import freeze_time

pytestmark = pytest.mark.django_db

START = "2026-05-04 09:00:00"


def _signed_in(alice: User) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def _is_signed_in(client: Client) -> bool:
    response = client.get("/admin/")
    return response.status_code == 200


def test_an_idle_session_ends_after_the_idle_timeout(alice: User, settings: Any) -> None:
    settings.SESSION_IDLE_TIMEOUT = 3600
    with freeze_time(START) as clock:
        client = _signed_in(alice)
        assert _is_signed_in(client)
        clock.tick(timedelta(minutes=59))
        assert _is_signed_in(client)  # activity within the timeout keeps it alive
        clock.tick(timedelta(minutes=61))
        response = client.get("/admin/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        assert "_auth_user_id" not in client.session


def test_an_active_session_ends_after_the_absolute_lifetime(alice: User, settings: Any) -> None:
    settings.SESSION_IDLE_TIMEOUT = 3600
    settings.SESSION_ABSOLUTE_LIFETIME = 4 * 3600
    with freeze_time(START) as clock:
        client = _signed_in(alice)
        assert _is_signed_in(client)  # the redirect after signing in
        for _ in range(7):  # a request every 30 minutes: never idle
            clock.tick(timedelta(minutes=30))
            assert _is_signed_in(client)
        clock.tick(timedelta(minutes=31))
        assert not _is_signed_in(client)


def test_last_activity_is_written_at_most_once_a_minute(alice: User) -> None:
    with freeze_time(START) as clock:
        client = _signed_in(alice)
        client.get("/admin/")
        seen = client.session["_session_seen_at"]
        clock.tick(timedelta(seconds=30))
        client.get("/admin/")
        assert client.session["_session_seen_at"] == seen
        clock.tick(timedelta(seconds=31))
        client.get("/admin/")
        assert client.session["_session_seen_at"] > seen


def test_the_defaults_are_twelve_hours_idle_and_seven_days_in_all(settings: Any) -> None:
    assert settings.SESSION_IDLE_TIMEOUT == 12 * 3600
    assert settings.SESSION_ABSOLUTE_LIFETIME == 7 * 24 * 3600
