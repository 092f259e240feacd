"""Degrade, don't collapse: database outages, load shedding, errors and headers."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.test import Client

from tests.edge import urls as test_urls

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.urls("tests.edge.urls")


def test_it_answers_503_with_retry_after_when_the_database_is_gone(client: Client) -> None:
    response = client.get("/t/db-gone/")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert b"Connection refused" not in response.content
    assert b"Traceback" not in response.content


def test_it_answers_api_clients_in_json_when_the_database_is_gone(client: Client) -> None:
    response = client.get("/api/v1/t/db-gone/")
    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"
    assert response["Retry-After"]


def test_it_shows_no_stack_trace_on_a_server_error() -> None:
    client = Client(raise_request_exception=False)
    response = client.get("/t/boom/")
    assert response.status_code == 500
    assert b"should-not-leak" not in response.content
    assert b"Traceback" not in response.content


def test_it_refuses_an_unknown_host(client: Client) -> None:
    response = client.get("/t/cheap/", HTTP_HOST="evil.example.com")
    assert response.status_code == 400


def test_it_sends_a_content_security_policy_without_inline_script(client: Client) -> None:
    response = client.get("/t/cheap/")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert response["X-Content-Type-Options"] == "nosniff"


def test_it_sheds_load_beyond_capacity_and_recovers(settings) -> None:
    settings.MAX_CONCURRENT_REQUESTS = 1
    # The middleware reads the limit when it is built, and its slots belong to that
    # handler: one fresh client (one handler, like one process) serves every thread.
    client = Client(raise_request_exception=False)
    test_urls.release.clear()
    test_urls.entered.clear()
    results: dict[str, int] = {}

    def slow_request() -> None:
        results["slow"] = client.get("/t/slow/").status_code

    worker = threading.Thread(target=slow_request)
    worker.start()
    assert test_urls.entered.wait(timeout=5)
    try:
        started = time.monotonic()
        refused = client.get("/t/boom/")
        elapsed = time.monotonic() - started
        assert refused.status_code == 503
        assert refused["Retry-After"]
        # Refused while the slot is still taken (the slow request holds it until released
        # below), not queued for it; the bound is generous, for a loaded machine.
        assert worker.is_alive() and not test_urls.release.is_set()
        assert elapsed < 2.0
        # Cheap (cached) views are still served while the slot is taken.
        assert client.get("/t/cheap/").status_code == 200
    finally:
        test_urls.release.set()
        worker.join(timeout=10)
    assert results["slow"] == 200
    # The slot is free again: no restart needed.
    admitted = client.get("/t/boom/")
    assert admitted.status_code == 500  # admitted (and failing for its own reasons), not shed


def test_it_passes_the_deployment_checks_with_production_settings() -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE", "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE",
                                                          "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS"}
    }  # fmt: skip
    env.update(
        DEBUG="0",
        SECRET_KEY="a-long-random-production-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        ALLOWED_HOSTS="status.example.com",
        SECURE_HSTS_PRELOAD="1",
        DJANGO_SETTINGS_MODULE="statuspage.settings",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
