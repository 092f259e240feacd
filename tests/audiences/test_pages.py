"""The audience pages: who may read them, what each shows, and how they are cached."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from audiences import services
from audiences.models import Page
from audiences.selectors import page_view
from incidents import services as incident_services
from incidents.models import ImpactWindow, Incident
from tests.audiences.conftest import Pages, World, customer_client
from tests.builders import make_incident, utc

NOW = "2026-12-01T12:00:00Z"
HEADERS_THAT_DIFFER = {"X-Request-ID"}


def _headers(response) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {k: v for k, v in response.headers.items() if k not in HEADERS_THAT_DIFFER}


@freeze_time(NOW)
def test_it_answers_anonymous_with_the_404_of_a_missing_page(pages: Pages) -> None:
    client = Client()
    missing = client.get("/p/no-such-page/")
    for url in ("/p/internal/", "/p/tailspin/", "/fr/p/tailspin/"):
        response = client.get(url)
        assert response.status_code == 404
        assert b"Secret" not in response.content and b"Tailspin" not in response.content
    assert client.get("/p/internal/").content == missing.content
    assert _headers(client.get("/p/internal/")) == _headers(missing)
    json_missing = client.get("/p/no-such-page/api/v2/summary.json")
    json_private = client.get("/p/internal/api/v2/summary.json")
    assert json_private.status_code == json_missing.status_code == 404
    assert json_private.content == json_missing.content


@freeze_time(NOW)
def test_it_shows_staff_the_internal_page_with_its_notes(
    staff_client: Client, world: World, pages: Pages
) -> None:
    update = world.storage_incident.updates.order_by("display_at").first()
    assert update is not None
    services.update_words_set(
        actor=None, update=update, audience_message="Dear customer", internal_note="Shard 7"
    )
    response = staff_client.get("/p/internal/")
    body = response.content.decode()
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-cache"
    assert "Cookie" in response["Vary"]
    assert "Secret internal page" in body and "Corporate VPN" in body
    assert "Shard 7" in body and "Dear customer" not in body
    assert "Gmail delays" in body and "Cloud Storage latency in Belgium" in body


@freeze_time(NOW)
def test_it_shows_a_customer_only_their_products_locations_and_words(world: World, pages: Pages) -> None:
    update = world.storage_incident.updates.order_by("display_at").first()
    assert update is not None
    services.update_words_set(
        actor=None, update=update, audience_message="Dear customer", internal_note="Shard 7"
    )
    client = customer_client(world.storage_customer)
    response = client.get("/p/tailspin/")
    body = response.content.decode()
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-cache"
    # The zone's incident touches the region's customer; Belgium's and Gmail's do not.
    assert "Cloud Storage write errors" in body
    assert "Cloud Storage latency in Belgium" not in body and "Gmail delays" not in body
    assert "1 h 30 min" in body or "1h 30" in body or "1 hour" in body
    assert "Dear customer" in body and "Shard 7" not in body
    # Another customer's page, and the internal one, are not theirs.
    assert client.get("/p/northwind/").status_code == 404
    assert client.get("/p/internal/").status_code == 404


@freeze_time(NOW)
def test_it_shows_the_gmail_customer_no_storage_incident(world: World, pages: Pages) -> None:
    client = customer_client(world.gmail_customer)
    body = client.get("/p/northwind/").content.decode()
    assert "Gmail delays" in body and "Cloud Storage" not in body
    data = json.loads(client.get("/p/northwind/api/v2/incidents.json").content)
    assert [i["name"] for i in data["incidents"]] == ["Gmail delays"]
    assert data["incidents"][0]["duration_minutes"] == 60


@freeze_time(NOW)
def test_it_serves_a_private_pages_json_to_a_key_until_it_is_revoked(
    world: World, pages: Pages, alice
) -> None:  # type: ignore[no-untyped-def]
    key, secret = services.page_key_create(actor=alice, page=pages.storage, label="Tailspin monitoring")
    client = Client()
    response = client.get(f"/p/tailspin/api/v2/summary.json?key={secret}")
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-cache"
    data = json.loads(response.content)
    assert data["page"]["name"] == "Tailspin private page"
    assert [c["name"] for c in data["components"]] == ["Cloud Storage"]
    bearer = client.get("/p/tailspin/api/v2/status.json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert bearer.status_code == 200
    assert client.get("/p/northwind/api/v2/summary.json?key=" + secret).status_code == 404
    services.page_key_revoke(actor=alice, key=key)
    assert client.get(f"/p/tailspin/api/v2/summary.json?key={secret}").status_code == 404
    assert "pk_" not in key.digest


def test_it_refuses_bad_pages_and_changes_nothing(world: World, pages: Pages) -> None:
    with pytest.raises(ValidationError) as refused:
        services.page_save(
            actor=None, slug="open", title="Open", visibility=Page.Visibility.PUBLIC, products=[world.vpn]
        )
    assert "products" in refused.value.message_dict
    with pytest.raises(ValidationError):
        services.page_save(actor=None, slug="tailspin", title="Again", visibility=Page.Visibility.INTERNAL)
    with pytest.raises(ValidationError):
        services.page_save(actor=None, slug="api", title="Reserved", visibility=Page.Visibility.INTERNAL)
    with pytest.raises(ValidationError):
        services.page_save(actor=None, slug="x", title="Bad\ntitle", visibility=Page.Visibility.INTERNAL)
    assert Page.objects.count() == 3


def test_it_serves_a_public_page_to_everyone_without_private_caching(world: World) -> None:
    services.page_save(
        actor=None,
        slug="workspace",
        title="Workspace",
        visibility=Page.Visibility.PUBLIC,
        products=[world.gmail],
    )
    response = Client().get("/p/workspace/")
    assert response.status_code == 200
    assert b"Gmail delays" in response.content
    assert "private" not in response.get("Cache-Control", "")


def test_it_shows_a_change_of_words_on_the_next_request(
    staff_client: Client, world: World, pages: Pages, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    assert b"Shard 9" not in staff_client.get("/p/internal/").content
    update = world.gmail_incident.updates.first()
    assert update is not None
    with django_capture_on_commit_callbacks(execute=True):
        services.update_words_set(actor=None, update=update, internal_note="Shard 9")
    assert b"Shard 9" in staff_client.get("/p/internal/").content
    with django_capture_on_commit_callbacks(execute=True):
        services.update_words_set(actor=None, update=update)
    assert b"Shard 9" not in staff_client.get("/p/internal/").content


def test_it_keeps_a_page_open_to_staff_for_ninety_days(
    staff_client: Client, world: World, pages: Pages
) -> None:
    with freeze_time(world.gmail_incident.started_at + timedelta(days=91)):
        body = staff_client.get("/p/internal/").content.decode()
    assert "Gmail delays" not in body


@freeze_time(NOW)
def test_it_lists_planned_maintenance_apart_and_keeps_products_operational(
    world: World, pages: Pages
) -> None:
    start, end = utc(2026, 12, 3, 8), utc(2026, 12, 3, 10)
    incident_services.incident_open(
        title="Storage maintenance in us-central1",
        kind=Incident.Kind.MAINTENANCE,
        status=Incident.Status.SCHEDULED,
        impact=Incident.Impact.NONE,
        body="Planned work.",
        started_at=start,
        scheduled_for=start,
        scheduled_until=end,
        windows=[
            incident_services.WindowSpec(
                product=world.storage,
                location=world.us_central1,
                level=ImpactWindow.Level.UNDER_MAINTENANCE,
                started_at=start,
                ended_at=end,
            )
        ],
    )
    view = page_view(page=pages.storage, now=timezone.now())
    assert [e.incident.title for e in view.planned] == ["Storage maintenance in us-central1"]
    assert not view.active and [r.level for r in view.products] == ["operational"]
    body = customer_client(world.storage_customer).get("/p/tailspin/").content.decode()
    assert "Scheduled maintenance" in body and "Storage maintenance in us-central1" in body


@freeze_time(NOW)
def test_it_builds_a_page_in_a_fixed_number_of_queries(
    world: World, pages: Pages, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    with django_assert_max_num_queries(8):
        page_view(page=pages.internal, now=timezone.now())
    for day in range(1, 6):
        make_incident(
            title=f"Gmail blip {day}",
            product=world.gmail,
            start=utc(2026, 11, day, 10),
            end=utc(2026, 11, day, 11),
        )
    with django_assert_max_num_queries(8):
        view = page_view(page=pages.internal, now=timezone.now())
    assert len(view.recent) == 8


@freeze_time(NOW)
def test_it_shows_one_incident_of_a_page_and_nothing_else(world: World, pages: Pages) -> None:
    client = customer_client(world.storage_customer)
    url = f"/p/tailspin/incidents/{world.storage_incident.public_id}/"
    response = client.get(url)
    assert response.status_code == 200 and response["Cache-Control"] == "private, no-cache"
    assert "Cloud Storage write errors" in response.content.decode()
    assert f'href="{url}"'.encode() in client.get("/p/tailspin/").content
    # An incident that does not touch the page, and anyone not a reader, get the 404.
    assert client.get(f"/p/tailspin/incidents/{world.europe_incident.public_id}/").status_code == 404
    assert client.get(f"/p/tailspin/incidents/{world.gmail_incident.public_id}/").status_code == 404
    anonymous = Client().get(url)
    assert anonymous.status_code == 404 and b"Cloud Storage write errors" not in anonymous.content
    assert anonymous.content == Client().get("/p/no-such-page/").content
