"""Pages by host name (PAGE_HOSTS and a page's own host) and per-page IP allowlists."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from freezegun import freeze_time

from audiences import services
from audiences.middleware import rewritten_path
from audiences.models import Page
from tests.audiences.conftest import Pages, World, customer_client

NOW = "2026-12-01T12:00:00Z"
HOST = "status.tailspin.example"


@pytest.fixture(autouse=True)
def _hosts(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver", HOST, "status.northwind.example", "elsewhere.example"]


def test_rewritten_paths() -> None:
    assert rewritten_path("/", "t") == "/p/t/"
    assert rewritten_path("/fr/", "t") == "/fr/p/t/"
    assert rewritten_path("/incidents/abc/", "t") == "/p/t/incidents/abc/"
    assert rewritten_path("/api/v2/summary.json", "t") == "/p/t/api/v2/summary.json"
    for untouched in ("/portal/", "/static/css/site.css", "/xx/", "/history/", "/api/v1/status/"):
        assert rewritten_path(untouched, "t") is None, untouched


@freeze_time(NOW)
def test_a_page_host_serves_the_page_at_the_root(
    world: World, pages: Pages, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.page_save(
            actor=None,
            page=pages.storage,
            slug=pages.storage.slug,
            title=pages.storage.title,
            visibility=pages.storage.visibility,
            products=[world.storage],
            locations=[world.us_central1],
            customers=[world.storage_customer],
            host="Status.Tailspin.Example.",
        )
    pages.storage.refresh_from_db()
    assert pages.storage.host == HOST
    reader = customer_client(world.storage_customer)
    page = reader.get("/", HTTP_HOST=HOST)
    assert page.status_code == 200 and b"Tailspin private page" in page.content
    assert page["Cache-Control"].startswith("private")
    incident = reader.get(f"/incidents/{world.storage_incident.public_id}/", HTTP_HOST=HOST)
    assert incident.status_code == 200 and b"Cloud Storage write errors" in incident.content
    # Anonymous on that host: the page's 404, as at /p/tailspin/.
    assert Client().get("/", HTTP_HOST=HOST).status_code == 404
    # Any other host: the public page, as before.
    public = Client().get("/", HTTP_HOST="elsewhere.example")
    assert public.status_code == 200 and b"Tailspin private page" not in public.content
    # The settings map a host too.
    settings.PAGE_HOSTS = {"status.northwind.example": pages.gmail.slug}
    gmail = customer_client(world.gmail_customer).get(
        "/api/v2/summary.json", HTTP_HOST="status.northwind.example"
    )
    assert gmail.status_code == 200 and gmail.json()["page"]["name"] == "Northwind private page"


def test_a_host_is_checked(world: World, pages: Pages) -> None:
    common: dict[str, Any] = {"actor": None, "slug": "x", "title": "X", "visibility": "internal"}
    with pytest.raises(ValidationError) as bad:
        services.page_save(**common, host="not a host")
    assert "host" in bad.value.message_dict
    services.page_save(**common, host=HOST)
    with pytest.raises(ValidationError) as taken:
        services.page_save(**{**common, "slug": "y"}, host=HOST)
    assert taken.value.message_dict["host"] == ["Another page has this host name."]


def test_networks_are_checked(world: World) -> None:
    common: dict[str, Any] = {"actor": None, "slug": "x", "title": "X", "visibility": "internal"}
    with pytest.raises(ValidationError) as bad:
        services.page_save(**common, allowed_networks=["10.0.0.0/8", "nonsense"])
    assert "nonsense" in bad.value.message_dict["allowed_networks"][0]
    page = services.page_save(**common, allowed_networks=["10.1.2.3/8", "2001:db8::1", "10.0.0.0/8"])
    assert page.allowed_networks == ["10.0.0.0/8", "2001:db8::1/128"]


@freeze_time(NOW)
def test_a_reader_outside_the_allowlist_gets_the_404_of_anonymous(
    world: World, pages: Pages, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.page_save(
            actor=None,
            page=pages.internal,
            slug="internal",
            title=pages.internal.title,
            visibility="internal",
            products=[world.gmail],
            allowed_networks=["10.20.0.0/16"],
        )
    staff = Client()
    staff.force_login(User.objects.create_user("staffer", is_staff=True))
    inside = staff.get("/p/internal/", REMOTE_ADDR="10.20.3.4")
    assert inside.status_code == 200
    outside = staff.get("/p/internal/", REMOTE_ADDR="192.0.2.9")
    missing = Client().get("/p/no-such-page/", REMOTE_ADDR="192.0.2.9")
    assert outside.status_code == 404
    assert outside.content == missing.content
    assert staff.get("/p/internal/api/v2/summary.json", REMOTE_ADDR="192.0.2.9").status_code == 404


def test_the_console_form_edits_host_and_networks(world: World, pages: Pages) -> None:
    admin = User.objects.create_superuser("admin", "admin@example.com", "x")
    client = Client()
    client.force_login(admin)
    url = f"/manage/pages/{pages.internal.pk}/"
    form = client.get(url)
    assert form.status_code == 200 and b'name="allowed_networks"' in form.content
    data = {
        "title": "Secret internal page",
        "slug": "internal",
        "visibility": "internal",
        "products": [world.gmail.pk],
        "host": "",
        "allowed_networks": "10.0.0.0/8\nbad range",
    }
    refused = client.post(url, data)
    assert refused.status_code == 200 and "“bad range” is not an address range".encode() in refused.content
    pages.internal.refresh_from_db()
    assert pages.internal.allowed_networks == []
    data["allowed_networks"] = "10.0.0.0/8\n192.168.1.0/24"
    assert client.post(url, data).status_code == 302
    pages.internal.refresh_from_db()
    assert pages.internal.allowed_networks == ["10.0.0.0/8", "192.168.1.0/24"]


def test_a_database_or_cache_outage_keeps_the_host_map_this_process_had(
    world: World, pages: Pages, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import OperationalError

    from audiences import selectors

    settings.ALLOWED_HOSTS = ["*"]
    Page.objects.filter(pk=pages.storage.pk).update(host=HOST)
    monkeypatch.setattr(selectors, "_hosts", None)
    assert selectors.page_for_host(HOST) == pages.storage.slug

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("the database is down")

    monkeypatch.setattr(selectors.Page.objects, "exclude", down)
    monkeypatch.setattr(selectors, "cache", SimpleNamespace(get=lambda *a, **k: "moved"))  # re-read
    assert selectors.page_for_host(HOST) == pages.storage.slug  # the last map, not an error

    def cache_down(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(selectors, "cache", SimpleNamespace(get=cache_down))
    assert selectors.page_for_host(HOST) == pages.storage.slug  # the cache down: the same
    monkeypatch.setattr(selectors, "_hosts", None)
    assert selectors.page_for_host(HOST) is None  # none yet: served as any host
    # A path a page never has on its host looks nothing up at all.
    assert Client().get("/healthz", HTTP_HOST=HOST).status_code == 200
