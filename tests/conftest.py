"""Shared fixtures: personas, service detection, and the REQUIRE_SERVICES rule.

Tests that need a real service use it when it is there and skip with a clear reason when
it is not. In CI, REQUIRE_SERVICES=1 turns each such skip into a failure, so a missing
service can never make the suite look green.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.contrib.auth.models import User

if TYPE_CHECKING:
    from tests.outbox.smtp import SmtpSink

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES", "") not in ("", "0")


def service_missing(reason: str) -> None:
    """Skip, or fail when REQUIRE_SERVICES is set."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing (REQUIRE_SERVICES=1): {reason}", pytrace=False)
    pytest.skip(reason)


def _port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@pytest.fixture
def redis_url() -> str:
    url = os.environ["TEST_REDIS_URL"]
    parsed = urlparse(url)
    if not _port_open(parsed.hostname or "127.0.0.1", parsed.port or 6379):
        service_missing(f"Redis is not reachable at {url}")
    return url


@pytest.fixture
def postgres() -> None:
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        service_missing("this test needs PostgreSQL: set DATABASE_URL=postgres://...")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        service_missing("Chromium is not installed (apt-get install chromium)")
    return path


@pytest.fixture
def smtp(settings: Any) -> Iterator[SmtpSink]:
    """A real SMTP server in this process; Django's SMTP backend pointed at it."""
    from tests.outbox.smtp import run_sink

    for sink in run_sink():
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = sink.port
        settings.EMAIL_USE_TLS = False
        settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = ""
        settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_TIMEOUT = 3
        yield sink


# --- Personas: alice is staff, bob is a signed-in non-staff user -------------------------


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user(
        "alice", "alice@example.org", "alice-password", is_staff=True, is_superuser=True
    )


@pytest.fixture
def bob(db: None) -> User:
    return User.objects.create_user("bob", "bob@example.org", "bob-password")


@pytest.fixture
def staff_client(client, alice):  # type: ignore[no-untyped-def]
    client.force_login(alice)
    return client


@pytest.fixture(autouse=True)
def _own_var_dir(settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Snapshots and other files the app writes under VAR_DIR stay within one test.
    settings.VAR_DIR = tmp_path


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    from django.core.cache import cache, caches

    from edge import cache_backend, guard, page_cache, version

    cache.clear()
    # Rate-limit counters have a cache of their own; a test's hits must not carry over.
    caches["ratelimit"].clear()
    # The per-process memo too: under frozen time two tests can mint the same version.
    page_cache._memo.clear()
    page_cache._memo_last.clear()
    # And the rest of the edge's per-process state: backoff, breakers, the known stamp.
    guard.reset()
    cache_backend.reset_breakers()
    version.reset()
    yield
