"""/healthz and /readyz: answered ahead of the host, TLS and language rules, never
cached, and /readyz names what is not ready."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from ops import health


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # free now, and nothing will listen on it


@pytest.fixture(autouse=True)
def _fresh_memo() -> Iterator[None]:
    health.reset()
    yield
    health.reset()


def test_it_answers_healthz_without_the_database(client: Client) -> None:
    # No database fixture: pytest-django refuses any query, so a query here would fail.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-store" in response["Cache-Control"]


def test_it_answers_before_host_tls_and_language_rules(client: Client, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["status.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST="10.0.0.7:8000")
    assert response.status_code == 200
    # The public pages still get the rules: the same request elsewhere is refused.
    assert client.get("/", HTTP_HOST="10.0.0.7:8000").status_code == 400
    # No language prefix: /fr/healthz is not a health check.
    assert client.get("/fr/healthz", HTTP_HOST="status.example.com", secure=True).status_code == 404


def test_it_refuses_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
    assert client.post("/readyz").status_code == 405


@pytest.mark.django_db
def test_it_is_ready_when_everything_answers(client: Client, settings: Any, redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body == {
        "status": "ok",
        "failed": [],
        "checks": {"database": "ok", "migrations": "ok", "broker": "ok", "cache": "ok"},
    }
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_it_skips_the_broker_in_the_embedded_mode(client: Client, settings: Any) -> None:
    settings.REDIS_URL = ""
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"]["broker"] == "ok"


@pytest.mark.django_db
def test_it_is_not_ready_when_the_broker_is_down(client: Client, settings: Any) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failing"
    assert body["failed"] == ["broker"]
    assert "ConnectionError" in body["checks"]["broker"]
    assert body["checks"]["database"] == "ok"


@pytest.mark.django_db
def test_it_is_not_ready_when_the_cache_is_down(client: Client, settings: Any) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "pages": {
            "BACKEND": "edge.cache_backend.ResilientRedisCache",
            "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        },
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["cache"]
    assert body["checks"]["cache"].startswith("pages: ")


@pytest.fixture
def database_down(postgres: None, transactional_db: None) -> Iterator[None]:
    conn = connections["default"]
    saved = dict(conn.settings_dict)
    conn.close()
    conn.settings_dict["HOST"] = "127.0.0.1"
    conn.settings_dict["PORT"] = str(_closed_port())
    yield
    conn.close()
    conn.settings_dict.update(saved)


def test_it_is_not_ready_when_the_database_is_down(client: Client, database_down: None) -> None:
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["database", "migrations"]
    assert "OperationalError" in body["checks"]["database"]
    assert body["checks"]["migrations"].startswith("not checked")


@pytest.mark.django_db
def test_it_is_not_ready_with_unapplied_migrations(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder.Migration.objects.filter(app="edge").order_by("-id").first()
    assert applied is not None
    applied.delete()  # the recorder now says the newest edge migration never ran
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["migrations"]
    assert body["checks"]["migrations"] == f"1 unapplied migration(s): edge.{applied.name}"
