"""The public pages are served from the versioned page cache: cheap, conditional, cookie-free."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from incidents import services
from incidents.models import ImpactWindow
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def test_it_serves_repeat_visits_from_the_cache_until_something_changes(
    client: Client,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    gmail = make_product("Gmail")
    first = client.get("/")
    assert first.status_code == 200
    assert "Cache-Control" in first and "public" in first["Cache-Control"]
    # No cookie is set; `/` names the language cookie in Vary (tests/public/test_vary.py)
    # and nothing that identifies a visitor is read.
    assert "Set-Cookie" not in first

    with CaptureQueriesContext(connection) as ctx:
        again = client.get("/")
    assert again.content == first.content
    assert len(ctx.captured_queries) == 0

    assert client.get("/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304

    # A write through the services bumps the public-state version after its commit.
    with django_capture_on_commit_callbacks(execute=True):
        make_incident(
            title="Gmail is down", product=gmail, start=utc(2026, 1, 1), level=ImpactWindow.Level.MAJOR_OUTAGE
        )
    fresh = client.get("/")
    assert "Gmail is down" in fresh.content.decode()
    assert fresh["ETag"] != first["ETag"]


def test_it_does_not_share_the_staff_view_of_an_incident(
    staff_client: Client,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    client = Client()  # anonymous: the `client` fixture is the one staff_client logs in
    gmail = make_product("Gmail")
    with django_capture_on_commit_callbacks(execute=True):
        hidden = make_incident(title="Not yet public", product=gmail, start=utc(2026, 1, 1), is_public=False)
    assert "Staff preview" in staff_client.get(f"/incidents/{hidden.public_id}/").content.decode()
    assert client.get(f"/incidents/{hidden.public_id}/").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_post_update(incident=hidden, status="identified", body="Found it.")
    assert client.get(f"/incidents/{hidden.public_id}/").status_code == 404
