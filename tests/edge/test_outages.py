"""Real outages against the real pages: the database and the cache server go away.

The database test needs PostgreSQL (the app's production database): it takes the
database away by pointing the live connection at a closed port, which gives the same
"connection refused" as a stopped server without stopping the server other tests use.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from edge import version as public_cache
from incidents.models import ImpactWindow, Incident
from tests.builders import make_incident, make_product, utc
from tests.public_urls import public_urls
from tests.waiting import wait_for


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # free now, and nothing will listen on it


@pytest.fixture
def world(transactional_db: None) -> Incident:
    gmail = make_product("Gmail")
    make_product("Cloud Storage")
    return make_incident(
        title="Gmail web interface unavailable",
        product=gmail,
        start=utc(2026, 11, 20, 19, 45),
        end=utc(2026, 11, 20, 21, 15),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
    )


@pytest.fixture
def database_outage(postgres: None, settings: Any) -> Iterator[Any]:
    """Call the yielded function to take the database away; it comes back afterwards."""
    settings.PUBLIC_CACHE_DB_BACKOFF = 0.2
    conn = connections["default"]
    saved = dict(conn.settings_dict)

    def cut() -> None:
        conn.close()
        conn.settings_dict["HOST"] = "127.0.0.1"
        conn.settings_dict["PORT"] = str(_closed_port())

    def restore() -> None:
        conn.close()
        conn.settings_dict.update(saved)

    outage = type("Outage", (), {"cut": staticmethod(cut), "restore": staticmethod(restore)})
    try:
        yield outage
    finally:
        restore()


def test_it_serves_the_snapshot_while_postgres_is_unreachable_and_recovers(
    world: Incident, database_outage: Any
) -> None:
    client = Client()
    page = client.get("/")
    summary = client.get("/api/v2/summary.json")
    assert page.status_code == summary.status_code == 200
    assert b"Gmail" in page.content

    database_outage.cut()
    public_cache._bump()  # a change the app can no longer render
    stale_page = client.get("/")
    assert stale_page.status_code == 200
    assert stale_page["X-Status-Snapshot"] == "stale"
    assert int(stale_page["Age"]) >= 0
    assert b"Live data is temporarily unavailable" in stale_page.content
    assert b"Gmail" in stale_page.content
    stale_summary = client.get("/api/v2/summary.json")
    assert stale_summary.status_code == 200
    assert stale_summary["X-Status-Snapshot"] == "stale"
    assert stale_summary.json() == summary.json()

    for url in ("/history/", f"/incidents/{world.public_id}/", "/products/gmail/", "/api/v1/incidents/"):
        response = client.get(url)
        assert response.status_code == 503, url
        assert int(response["Retry-After"]) > 0, url
        assert b"Traceback" not in response.content, url

    # The database comes back: fresh pages again, without restarting anything.
    database_outage.restore()
    # Fresh once the short back-off after a failure has run out.
    fresh = wait_for(lambda: r if "X-Status-Snapshot" not in (r := client.get("/")) else None, timeout=10)
    assert fresh.status_code == 200
    assert client.get("/history/").status_code == 200


def test_it_sets_a_statement_timeout_on_postgres(postgres: None, db: None) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        (value,) = cursor.fetchone()
    assert value not in ("0", "0ms")


def test_it_keeps_every_public_page_up_when_the_cache_server_is_down(world: Incident, settings: Any) -> None:
    # Nothing listens on this port: every cache call fails (fast) as if Redis had died.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    client = Client()
    urls = public_urls(incident_id=world.public_id, product_slug="gmail")
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)


def test_it_rebuilds_the_real_status_page_once_for_a_herd_after_a_change(world: Incident) -> None:
    import threading
    from unittest import mock

    from public_site import pages as public_selectors

    real = public_selectors.status_page
    renders: list[int] = []

    def counting(**kwargs: Any) -> Any:
        renders.append(1)
        time.sleep(0.2)  # a slow render, so the herd arrives while it runs
        return real(**kwargs)

    client = Client()
    assert client.get("/").status_code == 200
    public_cache._bump()
    statuses: list[int] = []
    with mock.patch.object(public_selectors, "status_page", counting):
        threads = [
            threading.Thread(target=lambda: statuses.append(Client().get("/").status_code)) for _ in range(16)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for alias in connections:
        connections[alias].close()
    assert statuses == [200] * 16
    assert len(renders) == 1
