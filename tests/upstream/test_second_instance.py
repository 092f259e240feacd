"""Acceptance: a second instance of this app, on loopback with its own SQLite database and
the demo data, read as an upstream provider through its Statuspage v2 JSON, beside a
recorded Google incidents.json and a recorded Atom feed. An incident declared on the
second instance shows on the first within one polling interval, in its own section, and
our own uptime does not move; stopping the second shows "unknown since …"."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from tests.builders import make_incident, make_product, utc
from tests.conftest import service_missing
from tests.faults import free_port
from tests.upstream.server import Served, serving
from tests.waiting import wait_for
from upstream import services, tasks
from upstream.models import Provider

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


class SecondInstance:
    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        drop = {
            "DATABASE_URL",
            "REDIS_URL",
            "PAGE_CACHE_URL",
            "RATELIMIT_REDIS_URL",
            "SITE_URL",
            "DJANGO_SETTINGS_MODULE",
        }
        self.env = {k: v for k, v in os.environ.items() if k not in drop} | {
            "DATABASE_URL": f"sqlite:///{tmp / 'second.sqlite3'}",
            "SITE_URL": self.base,
            "DEBUG": "1",
            "VAR_DIR": str(tmp / "var"),
        }
        self.log = tmp / "second.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"],
            cwd=ROOT,
            env=self.env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        wait_for(self._up, timeout=60, message=lambda: self.log.read_text()[-2000:])

    def _up(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-2000:]
        try:
            with urllib.request.urlopen(f"{self.base}/api/v2/summary.json", timeout=5) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)

    def api_key(self) -> str:
        code = (
            "from django.contrib.auth.models import User; from api.services import api_key_create; "
            "print(api_key_create(user=User.objects.get(username='staff'), name='upstream test', scope='write').raw)"
        )
        return self.manage("shell", "-c", code).strip().splitlines()[-1]

    def declare(self, key: str) -> dict[str, object]:
        started = timezone.now().replace(microsecond=0) - timedelta(minutes=3)
        body = {
            "title": "Gmail delivery delayed",
            "body": "Some messages are delayed. We are investigating.",
            "started_at": started.isoformat(),
            "windows": [{"product": "gmail", "level": "partial_outage", "started_at": started.isoformat()}],
        }
        request = urllib.request.Request(
            f"{self.base}/api/v1/incidents/",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
            return dict(json.loads(response.read()))


@pytest.fixture
def second(tmp_path: Path) -> Iterator[SecondInstance]:
    if os.environ.get("UPSTREAM_SKIP_SECOND_INSTANCE"):
        service_missing("UPSTREAM_SKIP_SECOND_INSTANCE is set")
    instance = SecondInstance(tmp_path)
    instance.manage("migrate", "--no-input", "-v", "0")
    instance.manage("load_demo")
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


def _our_figures(client: Client) -> tuple[str, str]:
    """What our own page says of our products (statuses and uptime), and our v2 JSON."""
    page = client.get("/").content.decode()
    products = re.search(r'data-live="products"[^>]*>(.*?)</section>', page, re.S)
    assert products is not None
    summary = json.loads(client.get("/api/v2/summary.json").content)
    return products.group(1), json.dumps([summary["components"], summary["status"]], sort_keys=True)


def test_a_second_instance_a_google_feed_and_an_atom_feed_are_read_into_their_own_section(
    second: SecondInstance,
    client: Client,
    on_pages: None,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    gmail = make_product("Gmail")
    make_incident(product=gmail, start=utc(2026, 11, 2, 9), end=utc(2026, 11, 2, 10))
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    served.put("/history.atom", "feed.atom", "application/atom+xml")
    commit = django_capture_on_commit_callbacks
    with serving(served) as recorded:
        with commit(execute=True):
            for name, url, kind in [
                ("Second status page", f"{second.base}/api/v2/summary.json", "statuspage_v2"),
                ("Example Cloud", f"{recorded}/incidents.json", "google"),
                ("Example Mail Relay", f"{recorded}/history.atom", "feed"),
            ]:
                services.provider_save(name=name, url=url, kind=kind, poll_interval_seconds=60, is_shown=True)
        before = _our_figures(client)
        with commit(execute=True):
            tasks.poll_providers.apply().get()  # the beat task
        first_read = Provider.objects.get(kind="statuspage_v2").last_success_at
        assert first_read is not None
        page = client.get("/").content.decode()
        section = page[page.index("Third-party services") :]
        assert "Second status page" in section and "Cloud Storage (us-central1)" in section
        assert "Delayed outbound delivery to some providers" in section
        assert "Gmail delivery delayed" not in section

        second.declare(second.api_key())
        # The next read, one interval later, brings it.
        with commit(execute=True):
            services.providers_poll(now=first_read + timedelta(seconds=60))

    page = client.get("/").content.decode()
    section = page[page.index("Third-party services") :]
    assert "Gmail delivery delayed" in section
    provider = Provider.objects.get(kind="statuspage_v2")
    assert provider.components.get(name="Gmail").status == "partial_outage"
    assert _our_figures(client) == before  # our uptime and statuses did not move

    second.stop()
    with django_capture_on_commit_callbacks(execute=True):
        services.providers_poll(now=first_read + timedelta(seconds=120))
    provider.refresh_from_db()
    assert provider.failures == 1 and provider.last_error.startswith("unreachable")
    page = client.get("/").content.decode()
    assert re.search(r"Unknown since [^<]+</span>", page), page[page.index("Third-party services") :][:2000]
    assert _our_figures(client) == before
