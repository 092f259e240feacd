"""Pages managed by staff: the console's Pages and the v1 API, through the same service."""

from __future__ import annotations

import json
from collections.abc import Mapping

from django.test import Client, TestCase

from audiences.models import Page, PageKey, UpdateWords
from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.api.keys import key_for
from tests.audiences.conftest import Pages, World, customer_client
from tests.builders import utc


def test_it_creates_and_edits_a_page_in_the_console(staff_client: Client, world: World) -> None:
    body = {
        "title": "Tailspin",
        "slug": "tailspin",
        "visibility": "audience",
        "products": [world.storage.pk],
        "locations": [world.us_central1.pk],
        "customers": [world.storage_customer.pk],
    }
    response = staff_client.post("/manage/pages/new/", body)
    page = Page.objects.get(slug="tailspin")
    assert response.status_code == 302 and response["Location"] == f"/manage/pages/{page.pk}/"
    assert list(page.customers.all()) == [world.storage_customer]
    listing = staff_client.get("/manage/pages/")
    assert b"Tailspin" in listing.content and b"/p/tailspin/" in listing.content
    # Bad input: a form error, nothing changed.
    refused = staff_client.post(
        f"/manage/pages/{page.pk}/", {**body, "visibility": "public", "title": "Open"}
    )
    assert refused.status_code == 200 and b"customers" in refused.content.lower()
    page.refresh_from_db()
    assert page.title == "Tailspin" and page.visibility == "audience"


def test_it_shows_a_new_key_once_and_stores_only_its_digest(staff_client: Client, pages: Pages) -> None:
    response = staff_client.post(
        f"/manage/pages/{pages.storage.pk}/keys/", {"label": "Monitoring"}, follow=True
    )
    text = response.content.decode()
    secret = text.split("?key=")[1].split("<")[0].split(" ")[0].strip()
    key = PageKey.objects.get(page=pages.storage)
    assert key.digest == PageKey.digest_of(secret) and secret not in key.digest
    assert Client().get(f"/p/tailspin/api/v2/status.json?key={secret}").status_code == 200


def test_it_creates_changes_and_deletes_a_page_through_the_api(alice, world: World) -> None:  # type: ignore[no-untyped-def]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key_for(alice, 'write')}")
    body = {"slug": "gmail-fans", "title": "Gmail fans", "visibility": "audience", "products": ["gmail"]}
    created = client.post("/api/v1/pages/", json.dumps(body), content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["products"] == ["gmail"] and created["Location"] == "/api/v1/pages/gmail-fans/"
    patched = client.patch(
        "/api/v1/pages/gmail-fans/",
        json.dumps({"customers": [world.gmail_customer.pk]}),
        content_type="application/json",
    )
    assert patched.status_code == 200 and patched.json()["customers"] == [world.gmail_customer.pk]
    bad = client.patch(
        "/api/v1/pages/gmail-fans/", json.dumps({"visibility": "public"}), content_type="application/json"
    )
    assert bad.status_code == 400 and Page.objects.get(slug="gmail-fans").visibility == "audience"
    assert [p["slug"] for p in client.get("/api/v1/pages/").json()["results"]] == ["gmail-fans"]
    assert client.delete("/api/v1/pages/gmail-fans/").status_code == 204
    assert not Page.objects.exists()
    assert Client().get("/api/v1/pages/").status_code in (401, 403)


def test_the_api_sets_a_pages_host_and_networks_and_refuses_bad_ones(alice, world: World) -> None:  # type: ignore[no-untyped-def]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key_for(alice, 'write')}")
    body = {"slug": "gmail-fans", "title": "Gmail fans", "visibility": "audience", "products": ["gmail"]}
    assert client.post("/api/v1/pages/", json.dumps(body), content_type="application/json").status_code == 201

    def patch(changes: Mapping[str, object]):  # type: ignore[no-untyped-def]
        return client.patch("/api/v1/pages/gmail-fans/", json.dumps(changes), content_type="application/json")

    done = patch(
        {"host": "Status.Gmail-Fans.example.", "allowed_networks": ["203.0.113.7", "198.51.100.0/24"]}
    )
    assert done.status_code == 200, done.content
    assert done.json()["host"] == "status.gmail-fans.example"
    assert done.json()["allowed_networks"] == ["203.0.113.7/32", "198.51.100.0/24"]
    # A PATCH that leaves them out keeps them.
    assert patch({"title": "Gmail readers"}).json()["allowed_networks"] == [
        "203.0.113.7/32",
        "198.51.100.0/24",
    ]
    for bad in (
        {"host": "not a host"},
        {"allowed_networks": ["10.0.0.0/33"]},
        {"allowed_networks": "10.0.0.0/8"},
    ):
        refused = patch(bad)
        assert refused.status_code == 400, (bad, refused.content)
        assert next(iter(bad)) in refused.content.decode()
    page = Page.objects.get(slug="gmail-fans")
    assert page.host == "status.gmail-fans.example" and page.title == "Gmail readers"
    assert page.allowed_networks == ["203.0.113.7/32", "198.51.100.0/24"]
    # Empty values clear them.
    cleared = patch({"host": "", "allowed_networks": []}).json()
    assert cleared["host"] == "" and cleared["allowed_networks"] == []


def test_it_posts_an_update_with_words_for_each_audience(
    staff_client: Client, world: World, pages: Pages
) -> None:
    incident = services.incident_open(
        title="Storage errors again",
        impact=Incident.Impact.MINOR,
        started_at=utc(2026, 11, 30, 18, 0),
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=world.storage,
                location=world.us_central1,
                level=ImpactWindow.Level.DEGRADED_PERFORMANCE,
                started_at=utc(2026, 11, 30, 18),
            )
        ],
    )
    url = f"/manage/incidents/{incident.public_id}/update/"
    form = staff_client.get(url).content.decode()
    # The form names the pages that will show the update, and not the Gmail customer's.
    assert "Tailspin private page" in form and "Secret internal page" in form
    assert "Northwind private page" not in form
    data = {
        "kind": "public",
        "status": "identified",
        "body": "Found it.",
        "display_at": "2026-11-30T10:20",
        f"level_{world.storage.pk}_{world.us_central1.pk}": ImpactWindow.Level.DEGRADED_PERFORMANCE,
        "impact": "",
        "notify": "",
        "audience_message": "Your buckets are safe.",
        "internal_note": "Rollback of build 42.",
    }
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = staff_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    words = UpdateWords.objects.get(update__incident=incident)
    assert (words.audience_message, words.internal_note) == (
        "Your buckets are safe.",
        "Rollback of build 42.",
    )
    customer = customer_client(world.storage_customer).get("/p/tailspin/").content.decode()
    assert "Your buckets are safe." in customer and "Rollback of build 42." not in customer
    internal = staff_client.get("/p/internal/").content.decode()
    assert "Rollback of build 42." in internal and "Your buckets are safe." not in internal
    public = Client().get(f"/incidents/{incident.public_id}/").content.decode()
    assert "Found it." in public and "Your buckets" not in public and "build 42" not in public
